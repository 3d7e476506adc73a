-- The inbox key becomes (consumer, message_id): two consumers sharing this database, each with its
-- own handler, each take a message into account once, without taking it from each other. The rows
-- so far are inventory-service's (its quarkus.application.name, the default consumer name).
-- Rewrites the primary key index: on a large inbox, run it when the consumer is stopped.
ALTER TABLE inbox ADD COLUMN consumer varchar(64) NOT NULL DEFAULT 'inventory-service';
ALTER TABLE inbox ALTER COLUMN consumer DROP DEFAULT;
ALTER TABLE inbox DROP CONSTRAINT inbox_pkey, ADD PRIMARY KEY (consumer, message_id);
