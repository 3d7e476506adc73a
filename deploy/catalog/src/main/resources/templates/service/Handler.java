package {{package}};

import dev.outboxinbox.events.Event;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxMetadata;
{{handler-imports}}import io.smallrye.common.annotation.NonBlocking;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * What {{name}} does with each event it consumes, once: {@link Inbox} calls this only for a message
 * new to it, inside the transaction that records it in the inbox, and acks after the commit. Throw
 * {@code RejectedMessageException} for a message that can never succeed (dead-lettered with your
 * reason); any other exception is judged by the inbox (an outage is retried, a message at fault is
 * dead-lettered with its reason).
 */
@ApplicationScoped
class {{Stem}}Handler {
{{handler-fields}}
    @Incoming("{{channel}}")
    @NonBlocking
    @Inbox
    void apply(Event event, InboxMetadata inbox) {
        // The placeholder effect: replace it with the service's own, in this same transaction.
        ReceivedEvent received = new ReceivedEvent();
        received.eventId = event.eventId();
        received.eventType = event.eventType();
        received.aggregateId = event.aggregateId();
        received.receivedAt = Instant.now();
        received.persist();
{{handler-sends}}    }
}
