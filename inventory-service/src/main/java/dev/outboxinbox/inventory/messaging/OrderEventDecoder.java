package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.MessageDecoder;
import dev.outboxinbox.inbox.NotReadableYetException;
import dev.outboxinbox.inbox.RejectedMessageException;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
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
@ApplicationScoped
class OrderEventDecoder implements MessageDecoder<OrderEvent> {

    /** The OrderCreated versions this instance reads: every one the contract has, unless told fewer. */
    private final Set<Integer> orderCreatedVersions;

    /**
     * @param versions {@code inventory.order-created-versions} (INVENTORY_ORDER_CREATED_VERSIONS): fewer versions
     *                 than the build knows make this instance behave as it did before its upgrade, for a rolling
     *                 deploy's rehearsal (deploy/chaos/run --rolling-deploy): a newer version is held, waiting for an
     *                 upgraded instance ({@link NotReadableYetException})
     */
    OrderEventDecoder(@ConfigProperty(name = "inventory.order-created-versions") Optional<List<Integer>> versions) {
        Set<Integer> known = EventSchema.versions(OrderCreated.TYPE);
        orderCreatedVersions = versions.<Set<Integer>>map(TreeSet::new).orElse(known);
        if (!known.containsAll(orderCreatedVersions)) {
            throw new IllegalArgumentException("inventory.order-created-versions (INVENTORY_ORDER_CREATED_VERSIONS) is "
                    + orderCreatedVersions + ", but OrderCreated has only versions " + known);
        }
    }

    @Override
    public OrderEvent decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
        try {
            return OrderCreated.TYPE.equals(type)
                    ? EventSchema.decode(messageId, type, schemaVersion, body, OrderEvent.class, orderCreatedVersions)
                    : EventSchema.decode(messageId, type, schemaVersion, body, OrderEvent.class);
        } catch (EventSchema.NewerVersionException e) {
            // Not poison: an upgraded instance reads it. Held, so that nothing of its aggregate overtakes it.
            throw new NotReadableYetException(e.getMessage());
        } catch (EventSchema.InvalidEventException e) {
            throw new RejectedMessageException(e.getMessage());
        }
    }
}
