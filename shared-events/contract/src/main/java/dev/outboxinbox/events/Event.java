package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import dev.outboxinbox.outbox.api.OutboxEvent;
import java.time.Instant;
import java.util.UUID;

/**
 * Every event of this system. The aggregate type names the exchange the relay publishes it to, the
 * event type is the routing key and the AMQP {@code type}, the event id the AMQP {@code message_id}
 * (a consumer's inbox key); type and version travel as properties, not in the payload. Each is an
 * {@link OutboxEvent}: a producer hands it to the outbox library's {@code OutboxEmitter} as it is.
 */
public interface Event extends OutboxEvent {

    /** Unique per event; becomes the outbox id and the AMQP {@code message_id}, the consumer's dedupe key. */
    @Override
    UUID eventId();

    @Override
    Instant occurredAt();

    @Override
    @JsonIgnore
    String eventType();

    @Override
    @JsonIgnore
    int schemaVersion();

    /** The exchange. */
    @Override
    @JsonIgnore
    String aggregateType();

    @Override
    @JsonIgnore
    String aggregateId();

    /** The one encoding ({@link EventJson}), which the contract tests validate against the schema. */
    @Override
    @JsonIgnore
    default String payloadJson() {
        return EventJson.write(this);
    }
}
