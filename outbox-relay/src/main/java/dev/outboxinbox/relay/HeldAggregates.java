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
 * standby taking over holds them too. Each row counts the events parked for its aggregate; a republish
 * deletes the rows of the aggregates it sent on only if the count is still what it was when the
 * republish began, so an event another instance parked meanwhile (a relay shares the parking queue with
 * the other relays) keeps its aggregate held. This instance keeps the keys it knows in memory, and
 * confirms a hit against the table before holding anything: the hot path asks the database only for
 * a batch that touches a held aggregate. A failure to record a hold fails the batch, retried whole.
 *
 * <p>The hold is by aggregate type and id (the exchange and the {@code aggregate_id} header). Not held:
 * a malformed row (parked straight, it can never be sent on), and, within one batch, an event sent
 * while the routing changed between its publish and an earlier event's of its aggregate (logged).
 */
@ApplicationScoped
class HeldAggregates {

    static final String TABLE = "relay_held_aggregates";

    /** An aggregate, as the outbox names it: its type (the exchange) and its id. */
    record Key(String aggregateType, String aggregateId) {

        /** The aggregate of a message on its way to (or parked from) its exchange; null for a malformed row. */
        static Key of(OutboundMessage message) {
            if (message.malformed() || message.properties().getHeaders() == null) {
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
            return Map.of();
        }
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

    /** The aggregates of events just parked (confirmed in the parking queue) are held, or stay held. */
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
                + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET parked = h.parked + 1")) {
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

    /** Each held aggregate with its count of parked events, taken before a republish takes the parked ones. */
    synchronized Map<Key, Long> counts() throws SQLException {
        Map<Key, Long> counts = new HashMap<>();
        try (Statement query = connection().createStatement();
             ResultSet rs = query.executeQuery("SELECT aggregate_type, aggregate_id, parked FROM " + TABLE)) {
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
     * event of theirs was parked since {@code before} was read (its count moved).
     */
    synchronized void released(Map<Key, Long> before, Collection<Key> sentOn) throws SQLException {
        List<Key> rows = sentOn.stream().filter(before::containsKey).distinct().toList();
        if (rows.isEmpty()) {
            return;
        }
        try (PreparedStatement delete = connection().prepareStatement(
                "DELETE FROM " + TABLE + " WHERE aggregate_type = ? AND aggregate_id = ? AND parked = ?")) {
            for (Key key : rows) {
                delete.setString(1, key.aggregateType());
                delete.setString(2, key.aggregateId());
                delete.setLong(3, before.get(key));
                delete.addBatch();
            }
            int[] deleted = delete.executeBatch();
            for (int i = 0; i < rows.size(); i++) {
                if (deleted[i] > 0 && known != null) {
                    known.remove(rows.get(i));
                }
            }
        } catch (SQLException e) {
            discard();
            throw e;
        }
    }

    private Set<Key> known() throws SQLException {
        if (known == null) {
            Set<Key> loaded = new HashSet<>(counts().keySet());
            if (!loaded.isEmpty()) {
                Log.infof("%d aggregate(s) held behind parked events (%s): their later events are parked too until"
                        + " POST /parked/republish", loaded.size(), TABLE);
            }
            known = loaded;
        }
        return known;
    }

    private Connection connection() throws SQLException {
        if (db != null && db.isValid(5)) {
            return db;
        }
        discard();
        Properties properties = new Properties();
        properties.setProperty("user", offsets.user());
        properties.setProperty("password", offsets.password());
        properties.setProperty("connectTimeout", "5");
        properties.setProperty("socketTimeout", "30");
        Connection opened = DriverManager.getConnection(offsets.jdbcUrl(), properties);
        try (Statement ddl = opened.createStatement()) {
            ddl.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (aggregate_type text NOT NULL, aggregate_id text NOT NULL,"
                    + " event_id text NOT NULL, reason text NOT NULL, parked bigint NOT NULL DEFAULT 1,"
                    + " since timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (aggregate_type, aggregate_id))");
        } catch (SQLException e) {
            opened.close();
            throw e;
        }
        db = opened;
        return opened;
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
        if (gone != null) {
            try {
                gone.close();
            } catch (SQLException e) {
                Log.debugf("Closing the held aggregates' connection: %s", e);
            }
        }
    }
}
