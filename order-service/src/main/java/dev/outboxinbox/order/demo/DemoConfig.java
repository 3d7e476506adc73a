package dev.outboxinbox.order.demo;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/**
 * Where the demo page's state comes from besides this service: the other services' HTTP endpoints,
 * as this service reaches them (DEMO_INVENTORY_URL, DEMO_OUTBOX_RELAY_URL, DEMO_OUTBOX_RELAY_INVENTORY_URL).
 */
@ConfigMapping(prefix = "demo")
public interface DemoConfig {

    @WithDefault("http://127.0.0.1:8082")
    String inventoryUrl();

    @WithDefault("http://127.0.0.1:8083")
    String outboxRelayUrl();

    @WithDefault("http://127.0.0.1:8084")
    String outboxRelayInventoryUrl();
}
