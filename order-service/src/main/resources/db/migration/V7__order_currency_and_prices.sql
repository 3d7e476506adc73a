-- OrderCreated v2 (shared-events/contract): an order says its currency, and each line may say its unit price.
-- Orders placed before had neither: EUR (what a v1 event is read as) and no price.
ALTER TABLE orders
    ADD COLUMN currency varchar(3) NOT NULL DEFAULT 'EUR' CHECK (currency ~ '^[A-Z]{3}$');
ALTER TABLE order_lines
    ADD COLUMN unit_price numeric(12, 2) CHECK (unit_price >= 0);
