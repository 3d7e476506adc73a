package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.inventory.inbox.InboxBatcher;
import dev.outboxinbox.inventory.inbox.InboxMetrics;
import dev.outboxinbox.inventory.inbox.Outcome;
import io.quarkus.logging.Log;
import io.smallrye.reactive.messaging.annotations.Blocking;
import io.smallrye.reactive.messaging.rabbitmq.IncomingRabbitMQMetadata;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import org.eclipse.microprofile.reactive.messaging.Message;

/**
 * The transport adapter, and the only class that touches acknowledgements:
 * <ul>
 *   <li>a message that fails the contract is dead-lettered with the reason, then acked;</li>
 *   <li>a valid one goes to the inbox, and is acked only after the transaction that recorded it
 *       committed — whether it took effect now or was a duplicate;</li>
 *   <li>one that could not be recorded for a transient reason is nacked back to the queue.</li>
 * </ul>
 * Messages run concurrently (up to the prefetch) so that the inbox can commit them in batches.
 */
@ApplicationScoped
public class OrderEventsConsumer {

    private final MessageClassifier classifier;
    private final InboxBatcher inbox;
    private final DeadLetters deadLetters;
    private final InboxMetrics metrics;

    OrderEventsConsumer(MessageClassifier classifier, InboxBatcher inbox, DeadLetters deadLetters, InboxMetrics metrics) {
        this.classifier = classifier;
        this.inbox = inbox;
        this.deadLetters = deadLetters;
        this.metrics = metrics;
    }

    @Incoming("orders")
    @Blocking(value = "inventory-consumer", ordered = false)
    public CompletionStage<Void> receive(Message<byte[]> message) {
        IncomingRabbitMQMetadata incoming = message.getMetadata(IncomingRabbitMQMetadata.class).orElseThrow();
        Classification classification = classifier.classify(incoming.getMessageId().orElse(null),
                incoming.getType().orElse(null), incoming.getHeaders(), message.getPayload());
        if (classification instanceof Classification.Rejected rejected) {
            return park(message, incoming, rejected.reason());
        }
        Outcome outcome = inbox.submit(((Classification.Accepted) classification).event()).join();
        if (outcome instanceof Outcome.Poison poison) {
            return park(message, incoming, poison.reason());
        }
        if (outcome instanceof Outcome.Transient failure) {
            Log.warnf("Message %s goes back to the queue: %s", incoming.getMessageId().orElse("?"), failure.reason());
            return message.nack(new IllegalStateException(failure.reason()));
        }
        if (outcome instanceof Outcome.Duplicate) {
            // Worth seeing: at-least-once delivery at work (a relay or consumer crash, a replay).
            Log.infof("Duplicate message %s: already in the inbox, acked without effect", incoming.getMessageId().orElse("?"));
        }
        return message.ack();
    }

    private CompletionStage<Void> park(Message<byte[]> message, IncomingRabbitMQMetadata incoming, String reason) {
        metrics.poisoned();
        return deadLetters.park(message, incoming, reason)
                .thenCompose(confirmed -> message.ack())
                .exceptionallyCompose(failure -> {
                    // The copy is not safe in the dead-letter queue: keep the original.
                    Log.errorf(failure, "Could not dead-letter message %s; it goes back to the queue",
                            incoming.getMessageId().orElse("?"));
                    return message.nack(failure);
                });
    }
}
