package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.NotReadableYetException;
import dev.outboxinbox.inbox.contract.ContractDecoder;
import jakarta.inject.Singleton;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * This consumer's half of the door (the inbox checked the envelope): the event types it takes (an
 * order's: OrderCreated, OrderCancelled), the JSON Schema of that version, and that the payload's
 * event id is the message id. Every version of OrderCreated comes out as the newest record (v1 upcast
 * to v2), so the handlers know one shape.
 */
@Singleton
class OrderEventDecoder extends ContractDecoder<OrderEvent> {

    /**
     * @param versions {@code inventory.order-created-versions} (INVENTORY_ORDER_CREATED_VERSIONS): fewer versions
     *                 than the build knows make this instance behave as it did before its upgrade, for a rolling
     *                 deploy's rehearsal (deploy/chaos/run --rolling-deploy): a newer version is held, waiting for an
     *                 upgraded instance ({@link NotReadableYetException})
     */
    OrderEventDecoder(@ConfigProperty(name = "inventory.order-created-versions") Optional<List<Integer>> versions) {
        super(OrderEvent.class, narrowed(versions));
    }

    private static Map<String, Set<Integer>> narrowed(Optional<List<Integer>> versions) {
        if (versions.isEmpty()) {
            return Map.of();
        }
        Set<Integer> reads = new TreeSet<>(versions.get());
        Set<Integer> known = EventSchema.versions(OrderCreated.TYPE);
        if (!known.containsAll(reads)) {
            throw new IllegalArgumentException("inventory.order-created-versions (INVENTORY_ORDER_CREATED_VERSIONS) is "
                    + reads + ", but OrderCreated has only versions " + known);
        }
        return Map.of(OrderCreated.TYPE, reads);
    }
}
