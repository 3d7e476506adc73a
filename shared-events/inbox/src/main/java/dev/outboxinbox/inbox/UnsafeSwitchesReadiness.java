package dev.outboxinbox.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Says in readiness whether messages are applied in order: "UNSAFE" while the negative control of
 * order ({@code inbox.unsafe.apply-out-of-order}, chaos profile only) is on. Never makes the service
 * unready: the switch is meant to run.
 */
@Readiness
@ApplicationScoped
class UnsafeSwitchesReadiness implements HealthCheck {

    private final DeduplicationGuard guard;

    UnsafeSwitchesReadiness(DeduplicationGuard guard) {
        this.guard = guard;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("inbox order").up()
                .withData("order", guard.inOrder() ? "in order" : "OUT OF ORDER (UNSAFE: chaos negative control)")
                .build();
    }
}
