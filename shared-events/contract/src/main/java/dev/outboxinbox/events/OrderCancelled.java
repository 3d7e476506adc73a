package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.UUID;

/**
 * The customer cancelled an order: version 1 of {@code schemas/OrderCancelled.v1.json}. Written by
 * order-service in the transaction that moves the order to {@code CANCELLING}, with the order's id
 * as its aggregate id, like {@link OrderCreated}: the same partition, so a consumer that keeps each
 * order's events in order sees it after the order's creation.
 */
public record OrderCancelled(UUID eventId, UUID orderId, Instant cancelledAt) implements OrderEvent {

    public static final String TYPE = "OrderCancelled";
    public static final int SCHEMA_VERSION = 1;

    @Override
    @JsonIgnore
    public Instant occurredAt() {
        return cancelledAt;
    }

    @Override
    @JsonIgnore
    public String eventType() {
        return TYPE;
    }

    @Override
    @JsonIgnore
    public int schemaVersion() {
        return SCHEMA_VERSION;
    }
}
