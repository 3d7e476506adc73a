package dev.outboxinbox.relay;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready when the engine streams from the slot, the broker connection is open and the last batch
 * was confirmed whole. Unroutable events make it not ready, and say which.
 */
@Readiness
@ApplicationScoped
public class RelayReadiness implements HealthCheck {

    private final RelayStatus status;
    private final ConfirmingPublisher publisher;

    RelayReadiness(RelayStatus status, ConfirmingPublisher publisher) {
        this.status = status;
        this.publisher = publisher;
    }

    @Override
    public HealthCheckResponse call() {
        boolean brokerUp = publisher.isConnected() || tryConnect();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("outbox-relay")
                .status(status.healthy() && brokerUp)
                .withData("broker", brokerUp ? "connected" : "unreachable")
                .withData("published", status.published())
                .withData("failedAttempts", status.failedAttempts())
                .withData("skippedNotOutbox", status.skipped());
        if (status.problem() != null) {
            response.withData("problem", status.problem());
        }
        if (!status.unroutable().isEmpty()) {
            response.withData("unroutable", String.join("; ", status.unroutable()));
        }
        if (status.lastRecovery() != null) {
            response.withData("lastRecovery", status.lastRecovery());
        }
        if (status.lastCommit() != null) {
            response.withData("lastCommit", status.lastCommit().toString());
        }
        return response.build();
    }

    private boolean tryConnect() {
        try {
            publisher.connect();
            return true;
        } catch (Exception e) {
            return false;
        }
    }
}
