package dev.outboxinbox.relay;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.flywaydb.core.Flyway;

/**
 * The relay's world for a test: the producer's database migrated by order-service's own
 * migrations, an offsets database, a least-privileged relay role (REPLICATION and SELECT on the
 * outbox, nothing else), and a virtual host of its own. Everything is recreated, so nothing an
 * earlier run left (slots, offsets, queues) leaks in.
 */
final class RelayFixture {

    static final String SOURCE_DB = "relay_source_test";
    static final String OFFSETS_DB = "relay_offsets_test";
    static final String ROLE = "relay_test";
    static final String ROLE_PASSWORD = "relay-test-secret";
    static final String SLOT = "test_relay";
    static final String VHOST = "relay-test";

    private RelayFixture() {
    }

    static PostgresEndpoint postgres() {
        return RealServices.postgres();
    }

    static RabbitMqEndpoint rabbitMq() {
        return RealServices.rabbitMq();
    }

    /** Recreates everything and returns the relay's configuration for it. */
    static Map<String, String> prepare() {
        PostgresEndpoint pg = postgres();
        pg.recreateDatabase(SOURCE_DB);
        pg.recreateDatabase(OFFSETS_DB);
        pg.execute("postgres",
                "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + ROLE + "') THEN "
                        + "CREATE ROLE " + ROLE + " LOGIN REPLICATION PASSWORD '" + ROLE_PASSWORD + "'; END IF; END $$",
                "ALTER DATABASE " + OFFSETS_DB + " OWNER TO " + ROLE);
        // order-service's own migrations, V2 of which grants the relay's role SELECT on the outbox.
        Flyway.configure()
                .dataSource(pg.jdbcUrl(SOURCE_DB), pg.user(), pg.password())
                .locations("filesystem:" + System.getProperty("order-service.migrations"))
                .placeholders(Map.of("outbox_publication", "outbox_publication", "relay_role", ROLE))
                .load().migrate();
        rabbitMq().recreateVirtualHost(VHOST);

        RabbitMqEndpoint broker = rabbitMq();
        Map<String, String> config = new LinkedHashMap<>();
        config.put("relay.source.host", pg.host());
        config.put("relay.source.port", String.valueOf(pg.port()));
        config.put("relay.source.database", SOURCE_DB);
        config.put("relay.source.user", ROLE);
        config.put("relay.source.password", ROLE_PASSWORD);
        config.put("relay.source.slot", SLOT);
        config.put("relay.offsets.jdbc-url", pg.jdbcUrl(OFFSETS_DB));
        config.put("relay.offsets.user", ROLE);
        config.put("relay.offsets.password", ROLE_PASSWORD);
        config.put("relay.broker.host", broker.host());
        config.put("relay.broker.port", String.valueOf(broker.port()));
        config.put("relay.broker.virtual-host", VHOST);
        config.put("relay.broker.user", broker.user());
        config.put("relay.broker.password", broker.password());
        // Short pauses, so tests of failures recover in seconds.
        config.put("relay.publishing.max-backoff", "PT1S");
        config.put("relay.publishing.confirm-timeout", "PT5S");
        return config;
    }

    /**
     * Drops the relay's slot once the tests are done (the databases stay for inspection): an
     * abandoned slot would pin WAL for the whole server until the next run.
     */
    static void dropSlot() {
        postgres().execute("postgres", "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name = '" + SLOT + "' AND NOT active");
    }

    /** Writes events to the outbox as the producer does, in one transaction; returns their ids. */
    static List<String> insertOrderCreated(int count, String traceparent) {
        try (Connection c = postgres().connect(SOURCE_DB)) {
            c.setAutoCommit(false);
            List<String> ids = insertOrderCreated(c, count, traceparent);
            c.commit();
            return ids;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes events in the caller's transaction. */
    static List<String> insertOrderCreated(Connection c, int count) throws SQLException {
        return insertOrderCreated(c, count, null);
    }

    private static List<String> insertOrderCreated(Connection c, int count, String traceparent) throws SQLException {
        List<String> ids = new ArrayList<>(count);
        try (PreparedStatement insert = c.prepareStatement("""
                INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at)
                VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, now())""")) {
            for (int i = 0; i < count; i++) {
                OrderCreated event = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-" + i,
                        List.of(new OrderCreated.Line("SKU-APPLE", 1 + i % 5)), Instant.now());
                insert.setObject(1, event.eventId());
                insert.setString(2, OrderEvent.AGGREGATE_TYPE);
                insert.setString(3, event.orderId().toString());
                insert.setString(4, OrderCreated.TYPE);
                insert.setInt(5, OrderCreated.SCHEMA_VERSION);
                insert.setString(6, EventJson.write(event));
                insert.setString(7, traceparent);
                insert.addBatch();
                ids.add(event.eventId().toString());
            }
            insert.executeBatch();
        }
        return ids;
    }

    /** An outbox row for an exchange and routing key of the test's choosing. */
    record RawEvent(String id, String walPositionBeforeCommit) {
    }

    /**
     * Writes a raw outbox row and reads the WAL position inside its transaction, after the insert:
     * the commit lies beyond it, so a slot confirmed past that position has taken the event as done.
     */
    static RawEvent insertRaw(String aggregateType, String type) {
        return insertRaw(aggregateType, "agg-1", type);
    }

    /** A raw outbox row of one aggregate, as {@link #insertRaw(String, String)}. */
    static RawEvent insertRaw(String aggregateType, String aggregateId, String type) {
        String id = UUID.randomUUID().toString();
        try (Connection c = postgres().connect(SOURCE_DB)) {
            c.setAutoCommit(false);
            try (var statement = c.createStatement()) {
                statement.execute("""
                        INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)
                        VALUES ('%s', '%s', '%s', '%s', 1, '{"probe": true}', now())""".formatted(id, aggregateType, aggregateId, type));
                try (var rs = statement.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
                    rs.next();
                    String lsn = rs.getString(1);
                    c.commit();
                    return new RawEvent(id, lsn);
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code count} raw outbox rows in one transaction (so the relay reads them as one batch); their ids in order. */
    static List<String> insertRaw(String aggregateType, String type, int count) {
        List<String> ids = new java.util.ArrayList<>();
        try (Connection c = postgres().connect(SOURCE_DB)) {
            c.setAutoCommit(false);
            try (var statement = c.prepareStatement("""
                    INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)
                    VALUES (?::uuid, ?, 'agg-1', ?, 1, '{"probe": true}', now())""")) {
                for (int i = 0; i < count; i++) {
                    String id = UUID.randomUUID().toString();
                    statement.setString(1, id);
                    statement.setString(2, aggregateType);
                    statement.setString(3, type);
                    statement.addBatch();
                    ids.add(id);
                }
                statement.executeBatch();
            }
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return ids;
    }

    /** Where the WAL ends now. */
    static String currentWalPosition() {
        try (Connection c = postgres().connect(SOURCE_DB); var rs = c.createStatement().executeQuery("SELECT pg_current_wal_lsn()::text")) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether the relay's slot has confirmed the WAL up to this position. */
    static boolean slotConfirmedPast(String walPosition) {
        try (Connection c = postgres().connect(SOURCE_DB);
             PreparedStatement query = c.prepareStatement(
                     "SELECT confirmed_flush_lsn >= ?::pg_lsn FROM pg_replication_slots WHERE slot_name = ?")) {
            query.setString(1, walPosition);
            query.setString(2, SLOT);
            try (var rs = query.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
