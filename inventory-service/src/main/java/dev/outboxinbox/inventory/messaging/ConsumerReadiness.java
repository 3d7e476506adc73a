package dev.outboxinbox.inventory.messaging;

import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready only while consuming: connected, topology declared, consumer registered. */
@Readiness
@ApplicationScoped
class ConsumerReadiness implements HealthCheck {

    private final OrderEventsConsumer consumer;

    ConsumerReadiness(OrderEventsConsumer consumer) {
        this.consumer = consumer;
    }

    @Override
    public HealthCheckResponse call() {
        String problem = consumer.problem();
        return HealthCheckResponse.named("RabbitMQ consumer")
                .status(problem == null)
                .withData("queue", dev.outboxinbox.events.Topology.INVENTORY_QUEUE)
                .withData("in flight", consumer.inFlight())
                .withData("problem", problem == null ? "none" : problem)
                .build();
    }
}
