package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.UUID;

/** Every event an order publishes, to the exchange {@value #AGGREGATE_TYPE}. */
public sealed interface OrderEvent extends Event permits OrderCreated {

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
