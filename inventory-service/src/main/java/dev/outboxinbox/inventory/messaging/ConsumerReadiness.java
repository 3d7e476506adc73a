package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inventory.inbox.DeduplicationGuard;
import dev.outboxinbox.inventory.inbox.InboxBatcher;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready only while consuming and applying: connected, topology declared, consumer registered, and
 * the inbox not held by an outage of the database.
 */
@Readiness
@ApplicationScoped
class ConsumerReadiness implements HealthCheck {

    private final OrderEventsConsumer consumer;
    private final InboxBatcher inbox;
    private final DeduplicationGuard deduplication;

    ConsumerReadiness(OrderEventsConsumer consumer, InboxBatcher inbox, DeduplicationGuard deduplication) {
        this.consumer = consumer;
        this.inbox = inbox;
        this.deduplication = deduplication;
    }

    @Override
    public HealthCheckResponse call() {
        String problem = consumer.problem() != null ? consumer.problem() : inbox.problem();
        return HealthCheckResponse.named("RabbitMQ consumer")
                .status(problem == null)
                .withData("queue", Topology.INVENTORY_QUEUE)
                .withData("in flight", consumer.inFlight())
                .withData("problem", problem == null ? "none" : problem)
                .withData("deduplication", deduplication.deduplicating() ? "on" : "OFF (UNSAFE: chaos negative control)")
                .build();
    }
}
