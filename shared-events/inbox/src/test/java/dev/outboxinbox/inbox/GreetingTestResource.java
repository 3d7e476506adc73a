package dev.outboxinbox.inbox;

import dev.outboxinbox.testing.RealServices;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.HashMap;
import java.util.Map;

/** A fresh database and virtual host on the real servers for the library's own test service. */
public class GreetingTestResource implements QuarkusTestResourceLifecycleManager {

    static final String VHOST = "inbox-library-test";

    @Override
    public Map<String, String> start() {
        Map<String, String> config = new HashMap<>(RealServices.freshDatasource("inbox_library_test"));
        config.putAll(RealServices.rabbitMq().freshInboxBrokerConfig(VHOST));
        return config;
    }

    @Override
    public void stop() {
        // Left for inspection; recreated by the next run.
    }
}
