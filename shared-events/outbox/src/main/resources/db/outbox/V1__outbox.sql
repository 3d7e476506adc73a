-- The transactional outbox, in the layout of Debezium's outbox event router. Written in the
-- transaction that changes the business state; read by outbox-relay from the WAL, never polled.
-- IF NOT EXISTS throughout: a service whose own migrations made these before the library owned
-- them (order-service's V1 and V2) keeps them as they are.
CREATE TABLE IF NOT EXISTS outbox (
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
CREATE INDEX IF NOT EXISTS outbox_occurred_at ON outbox (occurred_at);

-- Created here, by the table's owner, so the relay's role needs only REPLICATION and SELECT.
-- Inserts only: the purge job's deletes must not reach the relay.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = '${outbox_publication}') THEN
        EXECUTE format('CREATE PUBLICATION %I FOR TABLE outbox WITH (publish = %L)', '${outbox_publication}', 'insert');
    END IF;
END $$;

-- The outbox is this service's published interface: the relay may read it, and nothing else here.
-- The relay's role is created by the deployment (deploy/postgres/create-databases.sql) before this
-- service starts; where it does not exist (tests of a service alone) there is nothing to grant.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '${relay_role}') THEN
        EXECUTE format('GRANT SELECT ON outbox TO %I', '${relay_role}');
    END IF;
END $$;
