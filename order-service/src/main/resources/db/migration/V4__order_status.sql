-- What inventory decided, as order-service learns it from inventory's reply (InventoryReserved /
-- InventoryRejected, through the inbox): PENDING until then, CONFIRMED or REJECTED once, never again.
ALTER TABLE orders
    ADD COLUMN status        varchar(16) NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'CONFIRMED', 'REJECTED')),
    ADD COLUMN status_reason text,
    ADD COLUMN decided_at    timestamptz,
    -- The reply that decided it: one reply decides an order, and the chaos verifier can tell which.
    ADD COLUMN decided_by    varchar(64);
