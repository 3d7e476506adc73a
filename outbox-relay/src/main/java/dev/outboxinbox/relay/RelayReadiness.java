package dev.outboxinbox.relay;

import dev.outboxinbox.events.Topology;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * The leader is ready when the engine streams from the slot, the broker connection is open and the
 * last batch was confirmed whole. Parked (unroutable) events leave it ready but DEGRADED, and say
 * which. A standby is ready while it can reach its database to ask for the lock: waiting is its job.
 * Both say which they are ({@code role}) and who leads.
 */
@Readiness
@ApplicationScoped
public class RelayReadiness implements HealthCheck {

    private final RelayStatus status;
    private final ConfirmingPublisher publisher;
    private final RelayLag lag;

    private final RelayLeadership leadership;

    RelayReadiness(RelayStatus status, ConfirmingPublisher publisher, RelayLag lag, RelayLeadership leadership) {
        this.status = status;
        this.publisher = publisher;
        this.lag = lag;
        this.leadership = leadership;
    }

    @Override
    public HealthCheckResponse call() {
        if (!leadership.isLeader() && !leadership.isStandby()) {
            // Not a standby yet: a single instance would otherwise look ready before it streams.
            HealthCheckResponseBuilder starting = HealthCheckResponse.named("outbox-relay").down()
                    .withData("role", "starting").withData("instance", leadership.instance());
            if (leadership.problem() != null) {
                starting.withData("problem", leadership.problem());
            }
            return starting.build();
        }
        if (!leadership.isLeader()) {
            RelayLeadership.Holder holder = leadership.holder();
            HealthCheckResponseBuilder standby = HealthCheckResponse.named("outbox-relay")
                    .status(leadership.problem() == null)
                    .withData("role", "standby")
                    .withData("instance", leadership.instance())
                    .withData("leader", holder == null ? "unknown" : holder.name() + " (session since " + holder.since() + ")")
                    .withData("published", status.published())
                    .withData("lag", lag());
            if (leadership.problem() != null) {
                standby.withData("problem", leadership.problem());
            }
            if (leadership.lastStepDown() != null) {
                standby.withData("lastStepDown", leadership.lastStepDown());
            }
            return standby.build();
        }
        boolean brokerUp = publisher.isConnected() || tryConnect();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("outbox-relay")
                .status(status.healthy() && brokerUp)
                .withData("role", "leader")
                .withData("instance", leadership.instance())
                .withData("leaderSince", String.valueOf(leadership.leaderSince()))
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
        // Reported, not a reason to be unready: a relay catching up on a backlog is doing its job.
        response.withData("lag", lag());
        if (status.lastRecovery() != null) {
            response.withData("lastRecovery", status.lastRecovery());
        }
        if (status.lastCommit() != null) {
            response.withData("lastCommit", status.lastCommit().toString());
        }
        return response.build();
    }

    /** The slot's lag, read from the producer's database: the same whichever instance asks. */
    private String lag() {
        RelayLag.Sample sample = lag.sample();
        return sample.problem() != null ? sample.problem()
                : "%s%d bytes of WAL retained, oldest unpublished event %.1f s old".formatted(
                        lag.exceeded(sample) ? "BEYOND THRESHOLD: " : "", sample.retainedWalBytes(), sample.oldestUnpublishedSeconds());
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
