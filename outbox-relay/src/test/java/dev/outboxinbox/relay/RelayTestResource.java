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
        // The relay has stopped with the application: its slot goes, the databases stay for inspection.
        RelayFixture.dropSlot();
    }
}
