-- Cancellation (OrderCancelled): what an order reserved is released, once, and told back (InventoryReleased).

-- CANCELLED_FIRST is a tombstone: the order's cancellation arrived before its OrderCreated (a
-- reordering: order-service commits the creation first, so only a fault puts them the other way).
-- It takes the order's outcome key, so the late OrderCreated finds it and reserves nothing.
-- V1 named no constraint: PostgreSQL called the column's check order_outcomes_status_check.
ALTER TABLE order_outcomes
    DROP CONSTRAINT order_outcomes_status_check,
    ADD CONSTRAINT order_outcomes_status_check CHECK (status IN ('RESERVED', 'REJECTED', 'CANCELLED_FIRST'));

-- One row per cancelled order: its primary key is the release's own unique key (a second
-- OrderCancelled for the order, under another message id, releases nothing), as order_outcomes'
-- is the reservation's. cancelled_at: when inventory applied it; message_id: the OrderCancelled.
CREATE TABLE cancellations (
    order_id     uuid        PRIMARY KEY,
    message_id   varchar(64) NOT NULL,
    cancelled_at timestamptz NOT NULL
);

-- What each cancellation gave back, per SKU. The reservations rows stay (the history of what the
-- order held); products.reserved went down by exactly these quantities.
CREATE TABLE releases (
    order_id uuid        NOT NULL,
    sku      varchar(64) NOT NULL REFERENCES products (sku),
    quantity integer     NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (order_id, sku)
);
