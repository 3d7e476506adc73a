package dev.outboxinbox.order.demo;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.util.Optional;

/**
 * Where the demo page's state comes from besides this service: the other services' HTTP endpoints,
 * as this service reaches them (DEMO_INVENTORY_URL, DEMO_OUTBOX_RELAY_URL, DEMO_OUTBOX_RELAY_INVENTORY_URL),
 * with the {@code monitor} credential their metrics and summaries ask for (MONITOR_PASSWORD, the one
 * this service's own door takes: one monitor across the system, as .env and the Secret have it).
 */
@ConfigMapping(prefix = "demo")
public interface DemoConfig {

    /**
     * DEMO_ENABLED: off unless asked for. The page's state shows anyone what the monitor may read (the
     * others' metrics, dead letters' ids and reasons; deploy/OPERATIONS.md, "Operations"), so it belongs to the demo
     * (compose, deploy/local), not to a deployment (Kubernetes leaves it off).
     */
    @WithDefault("false")
    boolean enabled();

    @WithDefault("http://127.0.0.1:8082")
    String inventoryUrl();

    @WithDefault("http://127.0.0.1:8083")
    String outboxRelayUrl();

    @WithDefault("http://127.0.0.1:8084")
    String outboxRelayInventoryUrl();

    /** Unset: the page shows the other services' health only. */
    Optional<String> monitorPassword();
}
