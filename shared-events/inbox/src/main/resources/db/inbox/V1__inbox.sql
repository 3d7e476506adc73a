-- The inbox: one row per message a consumer took into account. Its primary key is the duplicate
-- detector: the handler inserts first, in the transaction that applies the effect; a conflict
-- means "done before". Keyed by consumer too, so consumers sharing a database never take a message
-- from each other. IF NOT EXISTS: a service whose own migrations made this table before the
-- library owned it (inventory-service's V1 and V3) keeps its table as it is.
CREATE TABLE IF NOT EXISTS inbox (
    consumer     varchar(64) NOT NULL,
    message_id   varchar(64) NOT NULL,
    message_type varchar(64) NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
-- The retention purge reads by age.
CREATE INDEX IF NOT EXISTS inbox_received_at ON inbox (received_at);
