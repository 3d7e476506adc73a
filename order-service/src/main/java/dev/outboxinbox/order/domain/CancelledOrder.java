package dev.outboxinbox.order.domain;

/**
 * The outcome of a cancel request: the order, and whether this request is the one that cancelled it
 * (moved it to CANCELLING and wrote OrderCancelled) rather than a repeat that changed nothing.
 */
public record CancelledOrder(OrderView order, boolean requestedNow) {
}
