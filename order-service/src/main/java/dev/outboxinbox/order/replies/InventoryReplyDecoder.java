package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.inbox.MessageDecoder;
import dev.outboxinbox.inbox.NotReadableYetException;
import dev.outboxinbox.inbox.RejectedMessageException;
import jakarta.enterprise.context.ApplicationScoped;

/** Inventory's replies, checked against their contract (type, schema version, schema, event id = message id). */
@ApplicationScoped
class InventoryReplyDecoder implements MessageDecoder<InventoryEvent> {

    @Override
    public InventoryEvent decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
        try {
            return EventSchema.decode(messageId, type, schemaVersion, body, InventoryEvent.class);
        } catch (EventSchema.NewerVersionException e) {
            // Not poison: an upgraded instance reads it. Held, so that nothing of its aggregate overtakes it.
            throw new NotReadableYetException(e.getMessage());
        } catch (EventSchema.InvalidEventException e) {
            throw new RejectedMessageException(e.getMessage());
        }
    }
}
