package dev.outboxinbox.order.domain;

/**
 * Where an order stands: placed and waiting for inventory ({@code PENDING}), decided by inventory's
 * reply ({@code CONFIRMED} or {@code REJECTED}), or cancelled by the customer: {@code CANCELLING}
 * from the request until inventory's {@code InventoryReleased} reply, then {@code CANCELLED}.
 */
public enum OrderStatus {
    PENDING, CONFIRMED, REJECTED, CANCELLING, CANCELLED;

    /** Whether a cancel request may still move the order to CANCELLING (a rejected order reserved nothing). */
    public boolean cancellable() {
        return this == PENDING || this == CONFIRMED;
    }

    /** Whether the order was cancelled already (a repeated request changes nothing). */
    public boolean cancelled() {
        return this == CANCELLING || this == CANCELLED;
    }
}
