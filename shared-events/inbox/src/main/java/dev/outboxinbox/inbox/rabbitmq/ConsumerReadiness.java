package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.DeduplicationGuard;
import dev.outboxinbox.inbox.InboxConfig;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready only while every stream consumes and applies: connected, topology declared, consumer
 * registered, and the inbox not held by an outage of the database. Partitioned, an instance that
 * reads none of the partitions (they are all taken) is ready too: it is the spare that takes some
 * over. With {@code inbox.ready-only-when-consuming=false} always up, the consumers' state in the data
 * ({@code problem}): a broker that refuses the topology in its own words (406, 403, 404), a consumer
 * that stopped naming its queue. With several channels each value is prefixed with its channel's name.
 */
@Readiness
@ApplicationScoped
class ConsumerReadiness implements HealthCheck {

    private final InboxConsumers consumers;
    private final DeduplicationGuard deduplication;
    private final boolean gates;

    ConsumerReadiness(InboxConsumers consumers, DeduplicationGuard deduplication, InboxConfig config) {
        this.consumers = consumers;
        this.deduplication = deduplication;
        this.gates = config.readyOnlyWhenConsuming();
    }

    @Override
    public HealthCheckResponse call() {
        List<String> expected = consumers.expected();
        boolean several = expected.size() > 1;
        List<String> queues = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        List<String> partitions = new ArrayList<>();
        Map<String, String> held = new TreeMap<>();
        int inFlight = 0;
        for (String channel : expected) {
            String prefix = several ? channel + ": " : "";
            Optional<InboxConsumer> opened = consumers.channel(channel);
            if (opened.isEmpty()) {
                problems.add(prefix + "not consuming yet: no subscriber on the inbox channel");
                continue;
            }
            InboxConsumer consumer = opened.get();
            queues.add(prefix + consumer.settings().queue());
            String problem = consumer.problem() != null ? consumer.problem() : consumer.inboxProblem();
            if (problem != null) {
                problems.add(prefix + problem);
            }
            if (consumer.partitions() != null) {
                // Which partitions this instance reads: none is a spare (more instances than partitions), not a fault.
                partitions.add(prefix + consumer.partitions());
            }
            // Ready still (it serves and reads its other queues); a queue paused behind a newer version waits for an upgrade.
            held.putAll(consumer.held());
            inFlight += consumer.inFlight();
        }
        HealthCheckResponseBuilder response = HealthCheckResponse.named("RabbitMQ consumer")
                .status(problems.isEmpty() || !gates)
                .withData("queue", String.join("; ", queues));
        if (!partitions.isEmpty()) {
            response = response.withData("partitions", String.join("; ", partitions));
        }
        if (!held.isEmpty()) {
            response = response.withData("held", held.toString());
        }
        return response
                .withData("in flight", inFlight)
                .withData("problem", problems.isEmpty() ? "none" : String.join("; ", problems))
                .withData("deduplication", deduplication.deduplicating() ? "on" : "OFF (UNSAFE: chaos negative control)")
                .build();
    }
}
