package dev.outboxinbox.relay;

import io.debezium.storage.jdbc.offset.JdbcOffsetBackingStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.WorkerConfig;

/**
 * Debezium's JDBC offset store, with every write fenced by the leader's term. Debezium's store
 * rewrites the whole table from its map at every commit (the engine's last one on close too); a
 * deposed leader's late commit would put its stale offsets over the new leader's, and the next
 * start would take the slot, confirmed past them, for recreated and republish the whole outbox.
 * Here the rewrite runs in one transaction that first checks, with a lock on the slot's row in
 * {@code relay_leadership}, that the term this engine was started in is still the current one;
 * otherwise nothing is written and the commit fails (the engine stops; it was deposed anyway). The
 * lock is exclusive ({@code FOR UPDATE}), so two terms' rewrites never interleave: a deposed term's
 * forward write (below) compares against what the current term has committed, never against a table
 * the other is rewriting.
 * Same table, same columns: offsets stored before this class are read as they are.
 */
public class FencedOffsetBackingStore extends JdbcOffsetBackingStore {

    static final String SLOT = "offset.storage.fence.slot";
    static final String TERM = "offset.storage.fence.term";
    static final String LEASE_MILLIS = "offset.storage.fence.lease.ms";

    private final AtomicInteger sequence = new AtomicInteger();
    private String url;
    private String user;
    private String password;
    private String table;
    private String slot;
    private long term;
    private long leaseMillis;
    private Connection connection;

    @Override
    public void configure(WorkerConfig config) {
        super.configure(config);
        Map<String, String> settings = config.originalsStrings();
        url = settings.get("offset.storage.jdbc.connection.url");
        user = settings.get("offset.storage.jdbc.connection.user");
        password = settings.getOrDefault("offset.storage.jdbc.connection.password", "");
        table = settings.get("offset.storage.jdbc.table.name");
        slot = settings.get(SLOT);
        if (slot == null || settings.get(TERM) == null) {
            throw new IllegalStateException(SLOT + " and " + TERM + " are required: offsets are written only within a term");
        }
        term = Long.parseLong(settings.get(TERM));
        leaseMillis = Long.parseLong(settings.getOrDefault(LEASE_MILLIS, "10000"));
    }

    @Override
    protected void save() {
        try {
            saveWithinTerm();
        } catch (SQLException e) {
            closeConnection();
            throw new ConnectException("Offsets not written: " + e.getMessage(), e);
        }
    }

    private synchronized void saveWithinTerm() throws SQLException {
        Connection c = connection();
        c.setAutoCommit(false);
        try {
            try (PreparedStatement check = c.prepareStatement(
                    "SELECT epoch FROM " + RelayLeadership.TERMS_TABLE + " WHERE slot_name = ? FOR UPDATE")) {
                check.setQueryTimeout((int) Math.max(1, leaseMillis / 3000));
                check.setString(1, slot);
                try (ResultSet rs = check.executeQuery()) {
                    long current = rs.next() ? rs.getLong(1) : -1;
                    if (current != term && !movesForward(c)) {
                        throw new RelayLeadership.Deposed("deposed: term " + term + " of slot " + slot
                                + " is over (the current term is " + current + "); its offsets are not written");
                    }
                }
            }
            try (Statement delete = c.createStatement()) {
                delete.executeUpdate("DELETE FROM " + table);
            }
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + table
                    + " (id, offset_key, offset_val, record_insert_ts, record_insert_seq) VALUES (?, ?, ?, ?, ?)")) {
                for (Map.Entry<String, String> entry : data.entrySet()) {
                    insert.setString(1, UUID.randomUUID().toString());
                    insert.setString(2, entry.getKey());
                    insert.setString(3, entry.getValue());
                    insert.setTimestamp(4, new Timestamp(System.currentTimeMillis()));
                    insert.setInt(5, sequence.incrementAndGet());
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            try {
                c.rollback();
            } catch (SQLException ignored) {
                // the connection is closed below; the transaction dies with it
            }
            if (e instanceof RelayLeadership.Deposed deposed) {
                throw new ConnectException(deposed.getMessage(), deposed);
            }
            throw e;
        }
    }

    private static final Pattern LSN = Pattern.compile("\"(?:lsn|lsn_commit|lsn_proc)\"\\s*:\\s*(\\d+)");

    /**
     * A deposed term may still record progress it really made, never move the offsets back: Debezium confirms
     * to the slot what its batches finished (each confirmed by the broker before it is marked processed), and a
     * refused write of the same position would leave the slot ahead of the stored offset, which the next
     * leader's recovery must read as a recreated slot and answer by republishing the whole outbox table. A
     * stale map (the late write this store exists to stop) is behind what is stored, and is still refused.
     */
    private boolean movesForward(Connection c) throws SQLException {
        long stored = -1;
        try (Statement query = c.createStatement(); ResultSet rs = query.executeQuery("SELECT offset_val FROM " + table)) {
            while (rs.next()) {
                stored = Math.max(stored, highestLsn(rs.getString(1)));
            }
        }
        long written = data.values().stream().mapToLong(FencedOffsetBackingStore::highestLsn).max().orElse(-1);
        return written > stored;
    }

    static long highestLsn(String offset) {
        long highest = -1;
        if (offset != null) {
            Matcher m = LSN.matcher(offset);
            while (m.find()) {
                highest = Math.max(highest, Long.parseLong(m.group(1)));
            }
        }
        return highest;
    }

    /**
     * One connection for the store's writes. A writer frozen inside its transaction holds the term's
     * row lock, which the next leader's term waits for: PostgreSQL ends such a transaction after the lease.
     */
    private Connection connection() throws SQLException {
        if (connection == null || connection.isClosed()) {
            Properties properties = new Properties();
            properties.setProperty("user", user);
            properties.setProperty("password", password == null ? "" : password);
            properties.setProperty("options", "-c idle_in_transaction_session_timeout=" + leaseMillis);
            properties.setProperty("ApplicationName", "outbox-relay offsets");
            connection = DriverManager.getConnection(url, properties);
        }
        return connection;
    }

    private void closeConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // already gone
            }
            connection = null;
        }
    }

    @Override
    public synchronized void stop() {
        super.stop();
        closeConnection();
    }
}
