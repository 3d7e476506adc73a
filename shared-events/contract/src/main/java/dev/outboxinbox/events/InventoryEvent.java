package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.UUID;

/**
 * What inventory did about an order, published to the exchange {@value #AGGREGATE_TYPE}: the reply
 * to {@link OrderCreated} (reserved or rejected) or to {@link OrderCancelled} (released). Written by
 * inventory-service to its own outbox in the transaction that records the order's message in its
 * inbox and changes the stock.
 */
public sealed interface InventoryEvent extends Event permits InventoryReserved, InventoryRejected, InventoryReleased {

    String AGGREGATE_TYPE = "inventory";

    /** The order the decision is about (the aggregate of the reply is the order). */
    UUID orderId();

    @Override
    @JsonIgnore
    default String aggregateType() {
        return AGGREGATE_TYPE;
    }

    @Override
    @JsonIgnore
    default String aggregateId() {
        return orderId().toString();
    }
}
