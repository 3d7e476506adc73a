package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.events.OrderCreated;

/** A message that passed every check at the door: its id, and the event it carries. */
public record ReceivedEvent(String messageId, OrderCreated event) {
}
