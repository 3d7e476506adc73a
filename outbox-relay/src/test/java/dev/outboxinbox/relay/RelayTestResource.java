package dev.outboxinbox.relay;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

public class RelayTestResource implements QuarkusTestResourceLifecycleManager {

    @Override
    public Map<String, String> start() {
        return RelayFixture.prepare();
    }

    @Override
    public void stop() {
        // Left for inspection; the next run recreates it all.
    }
}
