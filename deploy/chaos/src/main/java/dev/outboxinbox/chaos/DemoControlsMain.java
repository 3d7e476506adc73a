package dev.outboxinbox.chaos;

import dev.outboxinbox.system.DemoControls;
import dev.outboxinbox.system.SystemUnderTest;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * deploy/local/demo: the demo page's fault controls against deploy/local, on 127.0.0.1 (port
 * DEMO_CONTROLS_PORT, 8090 by default), with the same credentials and the same broker restart as the
 * chaos run. Runs until stopped.
 */
public final class DemoControlsMain {

    private DemoControlsMain() {
    }

    public static void main(String[] args) throws Exception {
        SystemUnderTest system = ChaosRun.system();
        Target local = Target.named("local", Path.of(System.getenv().getOrDefault("CHAOS_ROOT", ".")));
        int port = Integer.parseInt(System.getenv().getOrDefault("DEMO_CONTROLS_PORT", "8090"));
        try (DemoControls controls = DemoControls.start(port, system.orders(), system.broker(), () -> {
            local.stopBrokerApp();
            local.startBrokerApp();
        })) {
            System.out.println("[demo] fault controls on " + controls.uri() + " (" + String.join(", ", controls.offered())
                    + "), for the page at " + system.orderService().resolve("/demo/"));
            new CountDownLatch(1).await();
        }
    }
}
