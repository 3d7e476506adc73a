package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.MessageDecoder;
import dev.outboxinbox.inbox.RejectedMessageException;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * This consumer's half of the door (the inbox checked the envelope): the event types it takes (an
 * order's: OrderCreated, OrderCancelled), the JSON Schema of that version, and that the payload's
 * event id is the message id.
 */
@ApplicationScoped
class OrderEventDecoder implements MessageDecoder<OrderEvent> {

    @Override
    public OrderEvent decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
        try {
            return EventSchema.decode(messageId, type, schemaVersion, body, OrderEvent.class);
        } catch (EventSchema.InvalidEventException e) {
            throw new RejectedMessageException(e.getMessage());
        }
    }
}
