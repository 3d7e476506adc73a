package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.inbox.InboxMessage;

/** What the door makes of a message before any transaction: an event to apply, or a reason to park it. */
sealed interface Classification {

    record Accepted(InboxMessage<OrderCreated> event) implements Classification {
    }

    record Rejected(String reason) implements Classification {
    }
}
