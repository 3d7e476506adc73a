package dev.outboxinbox.relay;

import dev.outboxinbox.events.Topology;
import java.util.Map;
import java.util.TreeMap;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * The leader is ready when the engine streams from the slot, the broker connection is open and the
 * last batch was confirmed whole. Parked events (unroutable, or refused by the broker) leave it ready
 * but DEGRADED, and say which, naming the exchanges the broker refuses; {@code broker} tells a broker
 * that is connected from one that blocks publishing (an alarm), refuses the relay's parking place,
 * or cannot be reached. Nothing here waits for a batch in progress. A standby is ready while it can reach its database to ask for the lock: waiting is its job.
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
        // Read without waiting for a batch in progress: a probe that hangs behind a blocked publish kills the pod.
        boolean brokerUp = publisher.isConnected() || publisher.connectIfIdle();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("outbox-relay")
                .status(status.healthy() && brokerUp)
                .withData("role", "leader")
                .withData("instance", leadership.instance())
                .withData("leaderSince", String.valueOf(leadership.leaderSince()))
                .withData("broker", publisher.brokerState())
                .withData("published", status.published())
                .withData("failedAttempts", status.failedAttempts())
                .withData("skippedNotOutbox", status.skipped());
        if (status.problem() != null) {
            response.withData("problem", status.problem());
        }
        String degraded = degraded();
        if (degraded != null) {
            // Still ready: the events behind them flow. Someone has to bind a queue or grant a permission, and republish.
            response.withData("degraded", degraded);
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

    /** Parked events, and the exchanges the broker refuses now by name; null if neither. */
    private String degraded() {
        StringBuilder degraded = new StringBuilder();
        Map<String, String> refusals = publisher.refusals();
        if (!refusals.isEmpty()) {
            degraded.append("the broker refuses exchange(s) ").append(String.join(", ", new TreeMap<>(refusals).keySet()))
                    .append(": their events are parked in ").append(Topology.RELAY_PARKING_QUEUE)
                    .append(" (grant the permission or fix the exchange, then POST /parked/republish); ");
            new TreeMap<>(refusals).forEach((exchange, reason) -> degraded.append(exchange).append(": ").append(reason).append("; "));
        }
        if (status.parked() > 0) {
            degraded.append(status.parked()).append(" event(s) parked in ").append(Topology.RELAY_PARKING_QUEUE)
                    .append(" since start (").append(status.refused()).append(" refused, the rest unroutable); last: ")
                    .append(status.lastParked());
        }
        return degraded.isEmpty() ? null : degraded.toString();
    }
}
