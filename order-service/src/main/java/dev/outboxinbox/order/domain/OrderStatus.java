package dev.outboxinbox.order.domain;

/** Where an order stands: placed and waiting for inventory, or decided by inventory's reply. */
public enum OrderStatus {
    PENDING, CONFIRMED, REJECTED
}
