package dev.outboxinbox.inventory;

import dev.outboxinbox.testing.RabbitMqEndpoint;
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
        RabbitMqEndpoint rabbit = RealServices.rabbitMq();
        rabbit.recreateVirtualHost(VHOST);
        config.put("rabbitmq-host", rabbit.host());
        config.put("rabbitmq-port", String.valueOf(rabbit.port()));
        config.put("rabbitmq-username", rabbit.user());
        config.put("rabbitmq-password", rabbit.password());
        config.put("rabbitmq-virtual-host", VHOST);
        // Fast retries, so the transient-failure test takes milliseconds.
        config.put("inventory.processing.initial-backoff", "PT0.05S");
        config.put("inventory.processing.max-backoff", "PT0.2S");
        return config;
    }

    @Override
    public void stop() {
        // Left for inspection; recreated by the next run.
    }
}
