package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.MessageHeaders;
import io.quarkus.logging.Log;
import io.smallrye.reactive.messaging.rabbitmq.IncomingRabbitMQMetadata;
import io.smallrye.reactive.messaging.rabbitmq.OutgoingRabbitMQMetadata;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.ZonedDateTime;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.eclipse.microprofile.reactive.messaging.Channel;
import org.eclipse.microprofile.reactive.messaging.Emitter;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.Metadata;

/**
 * Parks a message in the dead-letter queue with the reason, the original exchange and routing key,
 * and everything it came with. The returned stage completes when the broker confirmed the copy;
 * only then is the original acked, so a crash in between redelivers it (a second copy in the
 * dead-letter queue, never none).
 */
@ApplicationScoped
class DeadLetters {

    static final String ORIGINAL_EXCHANGE = "x-original-exchange";
    static final String ORIGINAL_ROUTING_KEY = "x-original-routing-key";

    private final Emitter<byte[]> emitter;

    DeadLetters(@Channel("dead-letters") Emitter<byte[]> emitter) {
        this.emitter = emitter;
    }

    CompletionStage<Void> park(Message<byte[]> original, IncomingRabbitMQMetadata incoming, String reason) {
        Map<String, Object> headers = new HashMap<>(incoming.getHeaders());
        headers.put(MessageHeaders.DEAD_LETTER_REASON, reason);
        headers.put(ORIGINAL_EXCHANGE, incoming.getExchange());
        headers.put(ORIGINAL_ROUTING_KEY, incoming.getRoutingKey());
        OutgoingRabbitMQMetadata.Builder metadata = OutgoingRabbitMQMetadata.builder()
                .withHeaders(headers)
                .withDeliveryMode(2)
                .withTimestamp(ZonedDateTime.now());
        incoming.getMessageId().ifPresent(metadata::withMessageId);
        incoming.getType().ifPresent(metadata::withType);
        incoming.getContentType().ifPresent(metadata::withContentType);
        Log.warnf("Dead-lettering message %s (routing key %s): %s",
                incoming.getMessageId().orElse("<no id>"), incoming.getRoutingKey(), reason);
        CompletableFuture<Void> confirmed = new CompletableFuture<>();
        // The emitted message is acked by the connector when the broker confirms it, nacked when it refuses.
        emitter.send(Message.of(original.getPayload(), Metadata.of(metadata.build()),
                () -> {
                    confirmed.complete(null);
                    return CompletableFuture.completedFuture(null);
                },
                failure -> {
                    confirmed.completeExceptionally(failure);
                    return CompletableFuture.completedFuture(null);
                }));
        return confirmed;
    }
}
