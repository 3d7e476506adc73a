package dev.outboxinbox.events;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * A valid event of each type this build knows, newest version, with a fresh event id and a fresh
 * aggregate: what a consumer's test publishes (the tests deploy/new-service writes do). The contract's
 * own test holds every type to having one that its schema accepts.
 */
public final class EventExamples {

    private EventExamples() {
    }

    /** @throws IllegalArgumentException for a type the contract does not know */
    public static Event of(String type) {
        UUID eventId = UUID.randomUUID();
        UUID orderId = UUID.randomUUID();
        Instant now = Instant.now();
        return switch (type) {
            case OrderCreated.TYPE -> new OrderCreated(eventId, orderId, "customer-example", "EUR",
                    List.of(new OrderCreated.Line("SKU-EXAMPLE", 2, new BigDecimal("9.90"))), now);
            case OrderCancelled.TYPE -> new OrderCancelled(eventId, orderId, now);
            case InventoryReserved.TYPE -> new InventoryReserved(eventId, orderId, now);
            case InventoryRejected.TYPE -> new InventoryRejected(eventId, orderId, "insufficient stock for SKU-EXAMPLE", now);
            case InventoryReleased.TYPE -> new InventoryReleased(eventId, orderId, List.of(new InventoryReleased.Line("SKU-EXAMPLE", 2)), now);
            default -> throw new IllegalArgumentException("no example of '" + type + "': the contract knows " + EventSchema.types());
        };
    }
}
