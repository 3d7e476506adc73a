package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.DeduplicationGuard;
import dev.outboxinbox.inbox.InboxConfig;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Map;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready only while consuming and applying: connected, topology declared, consumer registered, and
 * the inbox not held by an outage of the database. Partitioned, an instance that reads none of the
 * partitions (they are all taken) is ready too: it is the spare that takes some over. With {@code inbox.ready-only-when-consuming=false}
 * always up, the consumer's state in the data ({@code problem}): a broker that refuses the topology in
 * its own words (406, 403, 404), a consumer that stopped naming its queue.
 */
@Readiness
@ApplicationScoped
class ConsumerReadiness implements HealthCheck {

    private final InboxConsumer consumer;
    private final DeduplicationGuard deduplication;
    private final String queue;
    private final boolean gates;

    ConsumerReadiness(InboxConsumer consumer, DeduplicationGuard deduplication, InboxConfig config) {
        this.consumer = consumer;
        this.deduplication = deduplication;
        this.queue = config.queue();
        this.gates = config.readyOnlyWhenConsuming();
    }

    @Override
    public HealthCheckResponse call() {
        String problem = consumer.problem() != null ? consumer.problem() : consumer.inboxProblem();
        HealthCheckResponseBuilder response = HealthCheckResponse.named("RabbitMQ consumer")
                .status(problem == null || !gates)
                .withData("queue", queue);
        String partitions = consumer.partitions();
        if (partitions != null) {
            // Which partitions this instance reads: none is a spare (more instances than partitions), not a fault.
            response = response.withData("partitions", partitions);
        }
        Map<String, String> held = consumer.held();
        if (!held.isEmpty()) {
            // Ready still (it serves and reads its other queues); a queue paused behind a newer version waits for an upgrade.
            response = response.withData("held", held.toString());
        }
        return response
                .withData("in flight", consumer.inFlight())
                .withData("problem", problem == null ? "none" : problem)
                .withData("deduplication", deduplication.deduplicating() ? "on" : "OFF (UNSAFE: chaos negative control)")
                .build();
    }
}
