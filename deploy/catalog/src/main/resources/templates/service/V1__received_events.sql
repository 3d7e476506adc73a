-- The placeholder effect of {{name}} (made by deploy/new-service): one row per event it took into
-- account, written in the inbox's transaction. Replace it with the service's own tables.
CREATE TABLE received_events (
    event_id     uuid        PRIMARY KEY,
    event_type   varchar(64) NOT NULL,
    aggregate_id varchar(64) NOT NULL,
    received_at  timestamptz NOT NULL
);
