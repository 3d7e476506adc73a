package dev.outboxinbox.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/** Dead if the thread that applies messages died: nothing would be acked again, so the process must be restarted. */
@Liveness
@ApplicationScoped
class InboxLiveness implements HealthCheck {

    private final InboxBatcher batcher;

    InboxLiveness(InboxBatcher batcher) {
        this.batcher = batcher;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("inbox batcher").status(batcher.alive()).build();
    }
}
