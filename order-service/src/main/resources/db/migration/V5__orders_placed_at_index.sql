-- The newest orders, read often by the demo page (GET /demo/state): an index, not a sort of the table.
CREATE INDEX IF NOT EXISTS orders_placed_at ON orders (placed_at);
