package dev.outboxinbox.events;

import java.time.Instant;
import java.util.UUID;

/**
 * Every event an order publishes. The aggregate type names the exchange the relay publishes to
 * ({@code orders}), the event type is the routing key.
 */
public sealed interface OrderEvent permits OrderCreated {

    String AGGREGATE_TYPE = "orders";

    /** Unique per event; becomes the outbox id and the AMQP {@code message_id}, the consumer's dedupe key. */
    UUID eventId();

    UUID orderId();

    Instant occurredAt();

    String eventType();

    int schemaVersion();
}
