-- Stock. available = on_hand - reserved, and the checks make overselling impossible whatever the code does.
CREATE TABLE products (
    sku      varchar(64)  PRIMARY KEY,
    name     varchar(200) NOT NULL,
    on_hand  integer      NOT NULL CHECK (on_hand >= 0),
    reserved integer      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    CHECK (reserved <= on_hand)
);

-- The inbox: one row per message taken into account. Its primary key is the duplicate detector:
-- the handler inserts first, in the transaction that applies the effect; a conflict means "done before".
CREATE TABLE inbox (
    message_id   varchar(64) PRIMARY KEY,
    message_type varchar(64) NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbox_received_at ON inbox (received_at);

-- The business outcome per order: one row per order, whatever the message id, so the effect has
-- a unique key of its own (a second event for the same order cannot reserve twice either).
CREATE TABLE order_outcomes (
    order_id   uuid        PRIMARY KEY,
    status     varchar(16) NOT NULL CHECK (status IN ('RESERVED', 'REJECTED')),
    reason     text,
    message_id varchar(64) NOT NULL,
    decided_at timestamptz NOT NULL
);

CREATE TABLE reservations (
    order_id uuid        NOT NULL REFERENCES order_outcomes (order_id),
    sku      varchar(64) NOT NULL REFERENCES products (sku),
    quantity integer     NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (order_id, sku)
);
