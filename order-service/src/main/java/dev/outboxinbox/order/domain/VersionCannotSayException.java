package dev.outboxinbox.order.domain;

import dev.outboxinbox.events.OrderCreated;

/**
 * order-service is pinned to OrderCreated v1 (its consumers are not all upgraded yet) and the order has
 * a price or a currency other than {@value OrderCreated#DEFAULT_CURRENCY}, which v1 cannot carry. Rather
 * than drop them, the request is refused; it succeeds once the service writes v2.
 */
public class VersionCannotSayException extends RuntimeException {

    public VersionCannotSayException() {
        super("order-service still writes OrderCreated v1 (ORDERS_ORDER_CREATED_VERSION=1, while its consumers are upgraded),"
                + " which carries no price and no currency but " + OrderCreated.DEFAULT_CURRENCY
                + ": leave them out, or place the order once the service writes v2");
    }
}
