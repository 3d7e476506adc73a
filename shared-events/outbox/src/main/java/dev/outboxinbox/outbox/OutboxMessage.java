package dev.outboxinbox.outbox;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * One event for the outbox, in the layout of Debezium's outbox event router: the relay publishes
 * it to the exchange {@code aggregateType} with routing key {@code type}, message id {@code id}
 * (the consumers' inbox key), and the schema version and trace context as headers.
 *
 * @param payload the event as JSON, exactly as consumers will read it
 * @param traceparent W3C trace context of the request that caused it, or null
 */
public record OutboxMessage(UUID id, String aggregateType, String aggregateId, String type, int schemaVersion,
                            String payload, String traceparent, Instant occurredAt) {

    public OutboxMessage {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(aggregateType, "aggregateType");
        Objects.requireNonNull(aggregateId, "aggregateId");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(occurredAt, "occurredAt");
    }
}
