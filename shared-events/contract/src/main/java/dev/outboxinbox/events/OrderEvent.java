package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.UUID;

/**
 * Every event an order publishes, to the exchange {@value #AGGREGATE_TYPE}, keyed by the order's id
 * (the aggregate id, which picks a consumer's partition): all of one order's events travel in one
 * partition, in the order order-service committed them.
 */
public sealed interface OrderEvent extends Event permits OrderCreated, OrderCancelled {

    String AGGREGATE_TYPE = "orders";

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
