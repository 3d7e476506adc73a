package dev.outboxinbox.order.domain;

/** The outcome of placing an order: the order, and whether it was an idempotent replay of an earlier request. */
public record PlacedOrder(OrderView order, boolean replayed) {
}
