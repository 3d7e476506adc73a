package dev.outboxinbox.order.domain;

import java.util.UUID;

/** The order is past the point where it can be cancelled: inventory rejected it, so nothing is held for it. */
public class OrderNotCancellableException extends RuntimeException {

    public OrderNotCancellableException(UUID id) {
        super("Order " + id + " cannot be cancelled: inventory rejected this order: nothing was reserved, so there is nothing to cancel");
    }
}
