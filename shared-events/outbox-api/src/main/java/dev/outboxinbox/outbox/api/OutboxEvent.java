package dev.outboxinbox.outbox.api;

import java.time.Instant;
import java.util.UUID;

/**
 * An event as the outbox routes it, in the layout of Debezium's outbox event router: the relay
 * publishes it to the exchange {@link #aggregateType()} with routing key {@link #eventType()}, message
 * id {@link #eventId()} (the consumers' inbox key), the schema version as a header and
 * {@link #aggregateId()} as the partition key. A contract's events implement it, and
 * {@code OutboxEmitter.send(event)} needs nothing else.
 */
public interface OutboxEvent {

    /** Unique per event: the outbox row's id and the AMQP {@code message_id}, the consumers' deduplication key. */
    UUID eventId();

    /** The exchange. */
    String aggregateType();

    /** What the event is about (an order's id): the consumers' partition key, so one aggregate's events stay in order. */
    String aggregateId();

    /** The routing key and the AMQP {@code type}. */
    String eventType();

    int schemaVersion();

    Instant occurredAt();

    /** The payload as JSON, exactly as consumers will read it. */
    String payloadJson();
}
