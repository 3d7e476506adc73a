package dev.outboxinbox.relay;

import dev.outboxinbox.events.MessageHeaders;
import io.quarkus.logging.Log;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * An aggregate's events reach consumers in the order they were written, parking or not. An event that
 * is parked (no queue bound for it, its exchange refused) holds its aggregate: the relay parks every
 * later event of that aggregate too, behind it, until a republish ({@code POST /parked/republish}) has
 * sent the parked ones on, in the order they were parked. Without the hold, an order created while
 * inventory's queue was unbound was parked, its cancellation written after the binding came back went
 * straight through, and inventory saw the cancellation first (chaos --full, seed 11: one tombstone).
 *
 * <p>The held aggregates are rows of {@value #TABLE} in the relay's own database, so a restart or the
 * standby taking over holds them too. This instance keeps the keys it knows in memory, and confirms a
 * hit against the table before holding anything: the hot path asks the database only for a batch that
 * touches a held aggregate, or that parks something.
 *
 * <p>Every relay instance (the standby, the other relays: they share the parking queue) may park and
 * republish, so the two are kept apart by an advisory lock in the relay's database: a republish holds it
 * exclusively for its whole run, a batch that holds or parks anything holds it shared from its look at
 * the table to its rows' commit. Otherwise a batch could park an aggregate's later event while a republish
 * on another instance writes that aggregate's still-stuck earlier one back behind it, or release an
 * aggregate whose event it had just parked. Both locks are transaction-scoped, and the session ends a
 * transaction idle for longer than {@value #IDLE_MILLIS} ms: an instance frozen while it holds one does
 * not hold up the others for longer. A row's {@code version} comes from a sequence, so a republish
 * releases an aggregate only if nothing parked an event of it since the republish read the row.
 *
 * <p>The hold is by aggregate type and id (the exchange and the {@code aggregate_id} header). A
 * malformed row never holds its aggregate: it can never be sent on, and would hold it for good.
 */
@ApplicationScoped
class HeldAggregates {

    static final String TABLE = "relay_held_aggregates";
    /** The advisory lock that keeps republishes (exclusive) and batches that hold or park (shared) apart. */
    static final long LOCK = 0x6f7574626f786864L;
    /** How long a transaction holding the lock may stay idle (waiting for the broker) before PostgreSQL ends the session. */
    static final int IDLE_MILLIS = 60_000;
    /** How long a batch waits for a republish elsewhere to end before it fails (and is retried). */
    static final int LOCK_WAIT_MILLIS = 30_000;

    /** An aggregate, as the outbox names it: its type (the exchange) and its id. */
    record Key(String aggregateType, String aggregateId) {

        /** The aggregate of a message on its way to (or parked from) its exchange; null for a malformed row. */
        static Key of(OutboundMessage message) {
            if (message.malformed() || message.properties().getHeaders() == null
                    || message.properties().getHeaders().containsKey(OutboundMessage.MALFORMED)) {
                return null;
            }
            Object id = message.properties().getHeaders().get(MessageHeaders.AGGREGATE_ID);
            return id == null ? null : new Key(message.exchange(), id.toString());
        }
    }

    private final RelayConfig.Offsets offsets;
    /** The held aggregates this instance knows of; null until loaded. Guarded by this. */
    private Set<Key> known;
    private Connection db;
    /** Whether a transaction holding the lock is open on {@link #db}: its statements commit together. */
    private boolean locked;

    HeldAggregates(RelayConfig config) {
        this.offsets = config.offsets();
    }

    /** A new term: what another instance held or released meanwhile is read again at the next use. */
    synchronized void forget() {
        known = null;
    }

    /**
     * @return of the batch's aggregates, those held now, each with why (the parked event it waits behind)
     */
    synchronized Map<Key, String> heldAmong(List<OutboundMessage> batch) throws SQLException {
        Set<Key> candidates = new HashSet<>();
        for (OutboundMessage message : batch) {
            Key key = Key.of(message);
            if (key != null && known().contains(key)) {
                candidates.add(key);
            }
        }
        if (candidates.isEmpty()) {
            return new HashMap<>();
        }
        lock(false);
        Map<Key, String> held = new HashMap<>();
        try (PreparedStatement query = connection().prepareStatement("SELECT aggregate_type, aggregate_id, event_id, reason FROM "
                + TABLE + " WHERE (aggregate_type, aggregate_id) IN (SELECT * FROM unnest(?::text[], ?::text[]))")) {
            bindKeys(query, candidates);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    held.put(new Key(rs.getString(1), rs.getString(2)), "held back behind parked event " + rs.getString(3)
                            + " of the same aggregate (" + rs.getString(4) + "); POST /parked/republish sends them on in order");
                }
            }
        } catch (SQLException e) {
            discard();
            throw e;
        }
        candidates.removeAll(held.keySet());
        known.removeAll(candidates); // released by a republish elsewhere
        return held;
    }

    /** Before anything is parked: a republish elsewhere ends first, and none starts until {@link #commit()}. */
    synchronized void aboutToPark() throws SQLException {
        lock(false);
    }

    /** The aggregates of events just parked (confirmed in the parking queue) are held, or stay held; under the lock. */
    synchronized void parked(List<BatchConfirms.Returned> parked) throws SQLException {
        Map<Key, BatchConfirms.Returned> first = new LinkedHashMap<>();
        for (BatchConfirms.Returned returned : parked) {
            Key key = Key.of(returned.message());
            if (key != null) {
                first.putIfAbsent(key, returned);
            }
        }
        if (first.isEmpty()) {
            return;
        }
        try (PreparedStatement upsert = connection().prepareStatement("INSERT INTO " + TABLE + " AS h"
                + " (aggregate_type, aggregate_id, event_id, reason) VALUES (?, ?, ?, ?)"
                + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET version = nextval('" + TABLE + "_version')")) {
            for (Map.Entry<Key, BatchConfirms.Returned> entry : first.entrySet()) {
                upsert.setString(1, entry.getKey().aggregateType());
                upsert.setString(2, entry.getKey().aggregateId());
                upsert.setString(3, entry.getValue().message().eventId());
                upsert.setString(4, entry.getValue().reason());
                upsert.addBatch();
            }
            upsert.executeBatch();
        } catch (SQLException e) {
            discard();
            throw e;
        }
        known().addAll(first.keySet());
    }

    /** For a republish: no batch holds or parks until {@link #commit()} (nor does any other republish). */
    synchronized void republishing() throws SQLException {
        lock(true);
    }

    /** Each held aggregate with its row's version, read before a republish takes the parked events. */
    synchronized Map<Key, Long> versions() throws SQLException {
        Map<Key, Long> counts = new HashMap<>();
        try (Statement query = connection().createStatement();
             ResultSet rs = query.executeQuery("SELECT aggregate_type, aggregate_id, version FROM " + TABLE)) {
            while (rs.next()) {
                counts.put(new Key(rs.getString(1), rs.getString(2)), rs.getLong(3));
            }
        } catch (SQLException e) {
            discard();
            throw e;
        }
        return counts;
    }

    /**
     * A republish sent every parked event of these aggregates on: they are no longer held, unless an
     * event of theirs was parked since {@code before} was read (its version moved).
     */
    synchronized void released(Map<Key, Long> before, Collection<Key> sentOn) throws SQLException {
        List<Key> rows = sentOn.stream().filter(before::containsKey).distinct().toList();
        if (rows.isEmpty()) {
            return;
        }
        try (PreparedStatement delete = connection().prepareStatement(
                "DELETE FROM " + TABLE + " WHERE aggregate_type = ? AND aggregate_id = ? AND version = ?")) {
            for (Key key : rows) {
                delete.setString(1, key.aggregateType());
                delete.setString(2, key.aggregateId());
                delete.setLong(3, before.get(key));
                delete.addBatch();
            }
            int[] deleted = delete.executeBatch();
            for (int i = 0; i < rows.size(); i++) {
                if (deleted[i] != 0 && known != null) {
                    known.remove(rows.get(i)); // SUCCESS_NO_INFO (-2) is a deletion too; a miss is 0
                }
            }
        } catch (SQLException e) {
            discard();
            throw e;
        }
    }

    private Set<Key> known() throws SQLException {
        if (known == null) {
            Set<Key> loaded = new HashSet<>(versions().keySet());
            if (!loaded.isEmpty()) {
                Log.infof("%d aggregate(s) held behind parked events (%s): their later events are parked too until"
                        + " POST /parked/republish", loaded.size(), TABLE);
            }
            known = loaded;
        }
        return known;
    }

    /** Ends the transaction that holds the lock, if one is open: what it wrote is kept, the lock let go. */
    synchronized void commit() throws SQLException {
        end(true);
    }

    /** After a failure: what the transaction wrote is undone (an aggregate stays held, or is not yet), the lock let go. */
    synchronized void rollback() {
        try {
            end(false);
        } catch (SQLException e) {
            // end() discarded the session, and its transaction and lock with it: undone all the same
        }
    }

    /** Commits or rolls back the open transaction; a failure discards the session (its lock goes with it). */
    private void end(boolean keep) throws SQLException {
        if (!locked) {
            return;
        }
        try {
            if (keep) {
                db.commit();
            } else {
                db.rollback();
            }
            db.setAutoCommit(true);
            locked = false;
        } catch (SQLException e) {
            discard();
            throw e;
        }
    }

    private void lock(boolean exclusive) throws SQLException {
        if (locked) {
            return;
        }
        Connection on = connection();
        try {
            on.setAutoCommit(false);
            locked = true;
            try (Statement lock = on.createStatement()) {
                lock.execute("SELECT " + (exclusive ? "pg_advisory_xact_lock(" : "pg_advisory_xact_lock_shared(") + LOCK + ")");
            }
        } catch (SQLException e) {
            discard();
            throw e;
        }
    }

    private Connection connection() throws SQLException {
        if (db != null && (locked || db.isValid(5))) {
            return db;
        }
        discard();
        Properties properties = new Properties();
        properties.setProperty("user", offsets.user());
        properties.setProperty("password", offsets.password());
        properties.setProperty("connectTimeout", "5");
        properties.setProperty("socketTimeout", String.valueOf(LOCK_WAIT_MILLIS / 1000 + 30));
        // A lock held by a frozen instance is let go once its idle transaction is ended; a wait for it is bounded.
        properties.setProperty("options", "-c idle_in_transaction_session_timeout=" + IDLE_MILLIS
                + " -c lock_timeout=" + LOCK_WAIT_MILLIS);
        Connection opened = DriverManager.getConnection(offsets.jdbcUrl(), properties);
        try {
            createTable(opened);
        } catch (SQLException e) {
            opened.close();
            throw e;
        }
        db = opened;
        return opened;
    }

    private static void createTable(Connection opened) throws SQLException {
        try (Statement ddl = opened.createStatement()) {
            ddl.execute("CREATE SEQUENCE IF NOT EXISTS " + TABLE + "_version");
            ddl.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (aggregate_type text NOT NULL, aggregate_id text NOT NULL,"
                    + " event_id text NOT NULL, reason text NOT NULL,"
                    + " version bigint NOT NULL DEFAULT nextval('" + TABLE + "_version'),"
                    + " since timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (aggregate_type, aggregate_id))");
        } catch (SQLException e) {
            // Two instances starting together: the other one's CREATE … IF NOT EXISTS won (a unique violation here).
            try (Statement check = opened.createStatement();
                 ResultSet rs = check.executeQuery("SELECT to_regclass('" + TABLE + "') IS NOT NULL")) {
                if (!(rs.next() && rs.getBoolean(1))) {
                    throw e;
                }
            }
        }
    }

    private static void bindKeys(PreparedStatement statement, Collection<Key> keys) throws SQLException {
        Connection on = statement.getConnection();
        statement.setArray(1, on.createArrayOf("text", keys.stream().map(Key::aggregateType).toArray()));
        statement.setArray(2, on.createArrayOf("text", keys.stream().map(Key::aggregateId).toArray()));
    }

    @PreDestroy
    synchronized void discard() {
        Connection gone = db;
        db = null;
        locked = false;
        if (gone != null) {
            try {
                gone.close();
            } catch (SQLException e) {
                Log.debugf("Closing the held aggregates' connection: %s", e);
            }
        }
    }
}
