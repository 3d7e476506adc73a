-- Cancellation (POST /orders/{id}/cancel): PENDING or CONFIRMED → CANCELLING, with OrderCancelled in the
-- outbox in the same transaction; CANCELLING → CANCELLED once inventory's InventoryReleased reply is applied.
-- V4 named no constraint: PostgreSQL called the column's check orders_status_check.
ALTER TABLE orders
    DROP CONSTRAINT orders_status_check,
    ADD CONSTRAINT orders_status_check
        CHECK (status IN ('PENDING', 'CONFIRMED', 'REJECTED', 'CANCELLING', 'CANCELLED')),
    -- When the customer asked (the request that wrote OrderCancelled); set once.
    ADD COLUMN cancel_requested_at timestamptz,
    -- When order-service learned that inventory released the order's stock.
    ADD COLUMN cancelled_at        timestamptz,
    -- The reply (its message id) that finished the cancellation: one reply does, and the chaos verifier can tell which.
    ADD COLUMN cancelled_by        varchar(64);
