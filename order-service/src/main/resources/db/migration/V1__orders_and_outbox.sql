-- The order aggregate.
CREATE TABLE orders (
    id          uuid         PRIMARY KEY,
    customer_id varchar(64)  NOT NULL,
    placed_at   timestamptz  NOT NULL
);

CREATE TABLE order_lines (
    order_id uuid        NOT NULL REFERENCES orders (id),
    line_no  integer     NOT NULL,
    sku      varchar(64) NOT NULL,
    quantity integer     NOT NULL CHECK (quantity BETWEEN 1 AND 10000),
    PRIMARY KEY (order_id, line_no),
    UNIQUE (order_id, sku)
);

-- Business idempotency: the primary key decides which of two concurrent requests with one
-- Idempotency-Key creates the order. The key row is inserted before the order it points to,
-- so the foreign key is checked at commit.
CREATE TABLE idempotency_keys (
    idempotency_key varchar(255) PRIMARY KEY,
    request_hash    varchar(64)  NOT NULL,
    order_id        uuid         NOT NULL REFERENCES orders (id) DEFERRABLE INITIALLY DEFERRED,
    created_at      timestamptz  NOT NULL DEFAULT now()
);

-- The transactional outbox, in the layout of Debezium's outbox event router. Written in the
-- transaction that changes the order; read by outbox-relay from the WAL, never polled.
CREATE TABLE outbox (
    id             uuid        PRIMARY KEY,   -- the event id; AMQP message_id; the consumer's inbox key
    aggregatetype  varchar(64) NOT NULL,      -- the exchange
    aggregateid    varchar(64) NOT NULL,
    type           varchar(64) NOT NULL,      -- the routing key
    schema_version integer     NOT NULL,
    payload        jsonb       NOT NULL,
    traceparent    varchar(55),
    occurred_at    timestamptz NOT NULL
);

-- For the purge job: rows are kept for a retention window, then deleted in batches.
CREATE INDEX outbox_occurred_at ON outbox (occurred_at);

-- Created here, by the table's owner, so the relay's role needs only REPLICATION and SELECT.
-- Inserts only: the purge job's deletes must not reach the relay.
CREATE PUBLICATION ${outbox_publication} FOR TABLE outbox WITH (publish = 'insert');
