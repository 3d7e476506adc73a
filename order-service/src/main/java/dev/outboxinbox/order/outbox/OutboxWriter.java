package dev.outboxinbox.order.outbox;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Transactional;
import java.util.Optional;

/**
 * Appends an event to the outbox. {@code MANDATORY}: it can only join the transaction that
 * changes the aggregate, never commit an event on its own.
 */
@ApplicationScoped
public class OutboxWriter {

    @Transactional(Transactional.TxType.MANDATORY)
    public void append(OrderEvent event, Optional<String> traceparent) {
        OutboxEvent row = new OutboxEvent();
        row.id = event.eventId();
        row.aggregateType = OrderEvent.AGGREGATE_TYPE;
        row.aggregateId = event.orderId().toString();
        row.type = event.eventType();
        row.schemaVersion = event.schemaVersion();
        row.payload = EventJson.write(event);
        row.traceparent = traceparent.orElse(null);
        row.occurredAt = event.occurredAt();
        row.persist();
    }
}
