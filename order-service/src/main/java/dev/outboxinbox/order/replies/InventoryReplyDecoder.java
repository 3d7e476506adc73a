package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.inbox.contract.ContractDecoder;
import jakarta.inject.Singleton;

/** Inventory's replies, checked against their contract (type, schema version, schema, event id = message id). */
@Singleton
class InventoryReplyDecoder extends ContractDecoder<InventoryEvent> {

    InventoryReplyDecoder() {
        super(InventoryEvent.class);
    }
}
