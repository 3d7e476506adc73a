package dev.outboxinbox.relay;

import dev.outboxinbox.events.Topology;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready when the engine streams from the slot, the broker connection is open and the last batch
 * was confirmed whole. Parked (unroutable) events leave it ready but DEGRADED, and say which.
 */
@Readiness
@ApplicationScoped
public class RelayReadiness implements HealthCheck {

    private final RelayStatus status;
    private final ConfirmingPublisher publisher;
    private final RelayLag lag;

    RelayReadiness(RelayStatus status, ConfirmingPublisher publisher, RelayLag lag) {
        this.status = status;
        this.publisher = publisher;
        this.lag = lag;
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
        if (status.parked() > 0) {
            // Still ready: the events behind it flow. Someone has to bind a queue and republish (POST /parked/republish).
            response.withData("degraded", status.parked() + " unroutable event(s) parked in " + Topology.RELAY_PARKING_QUEUE
                    + " since start; last: " + status.lastParked());
        }
        RelayLag.Sample sample = lag.sample();
        // Reported, not a reason to be unready: a relay catching up on a backlog is doing its job.
        response.withData("lag", sample.problem() != null ? sample.problem()
                : "%s%d bytes of WAL retained, oldest unpublished event %.1f s old".formatted(
                        lag.exceeded(sample) ? "BEYOND THRESHOLD: " : "", sample.retainedWalBytes(), sample.oldestUnpublishedSeconds()));
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
