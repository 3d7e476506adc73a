package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.UUID;

/**
 * Every event of this system. The aggregate type names the exchange the relay publishes it to, the
 * event type is the routing key and the AMQP {@code type}, the event id the AMQP {@code message_id}
 * (a consumer's inbox key); type and version travel as properties, not in the payload.
 */
public interface Event {

    /** Unique per event; becomes the outbox id and the AMQP {@code message_id}, the consumer's dedupe key. */
    UUID eventId();

    Instant occurredAt();

    @JsonIgnore
    String eventType();

    @JsonIgnore
    int schemaVersion();

    /** The exchange. */
    @JsonIgnore
    String aggregateType();

    @JsonIgnore
    String aggregateId();
}
