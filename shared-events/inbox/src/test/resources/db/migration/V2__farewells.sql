-- The test service's second stream: one row per farewell applied.
CREATE TABLE farewells (
    message_id varchar(64) PRIMARY KEY,
    text       text        NOT NULL
);
