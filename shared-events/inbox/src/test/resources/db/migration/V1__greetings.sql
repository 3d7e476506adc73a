-- The test service's own business table: one row per greeting applied.
CREATE TABLE greetings (
    message_id varchar(64) PRIMARY KEY,
    text       text        NOT NULL
);
