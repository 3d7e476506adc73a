package dev.outboxinbox.inventory;

import dev.outboxinbox.testing.RealServices;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.HashMap;
import java.util.Map;

/** A fresh database and a fresh virtual host on the real servers. */
public class InventoryTestResource implements QuarkusTestResourceLifecycleManager {

    static final String DATABASE = "inventory_service_test";
    static final String VHOST = "inventory-test";

    @Override
    public Map<String, String> start() {
        Map<String, String> config = new HashMap<>(RealServices.freshDatasource(DATABASE));
        config.putAll(RealServices.rabbitMq().freshInboxBrokerConfig(VHOST));
        // Fast retries, so the transient-failure test takes milliseconds.
        config.put("inbox.initial-backoff", "PT0.05S");
        config.put("inbox.max-backoff", "PT0.2S");
        return config;
    }

    @Override
    public void stop() {
        // Left for inspection; recreated by the next run.
    }
}
