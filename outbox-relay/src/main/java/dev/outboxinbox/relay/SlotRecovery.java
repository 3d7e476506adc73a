package dev.outboxinbox.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;

/**
 * Closes the one gap the WAL cannot: events committed while no slot kept the WAL for the relay.
 * That happens before the relay's first start (unless the deployment made the slot first), after a
 * reset that dropped the slot, after a failover to a standby (PostgreSQL 15 does not copy slots),
 * and when PostgreSQL invalidated the slot because it retained more than
 * {@code max_slot_wal_keep_size}.
 *
 * <p>Before every engine start it compares the slot with the relay's stored offset. A slot that is
 * missing or lost is made anew; a slot confirmed beyond the stored offset is not the one the relay
 * was reading (it was recreated behind its back); and without a stored offset (a first start, or
 * offsets deleted) nothing tells whether the slot is older than the first event: a slot made by
 * hand after orders were placed looks the same as one the deployment made before. In each case the
 * events in between may exist only in the outbox table, so every row still there is published
 * again, confirmed, before streaming starts; the consumers' inboxes absorb the copies. The order of steps is what makes it safe:
 * <ol>
 *   <li>a marker is committed in the relay's own database, so a crash at any later step repeats the
 *       recovery instead of forgetting it;</li>
 *   <li>the slot is created, so every commit from now on is kept in the WAL for the relay;</li>
 *   <li>the outbox table is read, after the slot exists: a row committed before the read is in it,
 *       a row committed after is in the slot. Nothing falls between;</li>
 *   <li>the marker and the stale offset are deleted together: Debezium starts at the slot.</li>
 * </ol>
 * The window this covers is the outbox's retention ({@code OUTBOX_RETENTION} in order-service,
 * 1 h by default): an event purged before the relay came back cannot be recovered from the table.
 *
 * <p>Only the current leader's term may act ({@link RelayLeadership#requireTerm}): the marker, the
 * offsets it clears and the slot it drops or makes are each written inside a transaction that holds
 * the term's share lock, so a deposed leader acting on what it read earlier is refused. A drop is
 * conditional on the slot being the very one that was read (its position and catalog xmin) and not in
 * use, so not even a leader frozen between its check and its drop can drop a slot made since. Before
 * it reads the slot, a new leader ends the walsender still reading it (a deposed leader's): the slot
 * then stands still, and the old leader cannot stream on next to the new one.
 */
@ApplicationScoped
class SlotRecovery {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int BATCH = 1_000;

    private final RelayConfig.Source source;
    private final RelayConfig.Offsets offsets;
    private final Duration lease;
    private final Duration walsenderTimeout;
    private final ConfirmingPublisher publisher;
    private final RelayStatus status;
    private final RelayTracing tracing;
    private final RelayLeadership leadership;

    SlotRecovery(RelayConfig config, ConfirmingPublisher publisher, RelayStatus status, RelayTracing tracing,
                 RelayLeadership leadership) {
        this.source = config.source();
        this.offsets = config.offsets();
        this.lease = config.leadership().lease();
        this.walsenderTimeout = config.fencing().walsenderTimeout();
        this.publisher = publisher;
        this.status = status;
        this.leadership = leadership;
        this.tracing = tracing;
    }

    /**
     * The slot as PostgreSQL reports it: where its consumer confirmed up to, whether its WAL is still
     * there, and what tells this slot from one made after it was read (position and catalog xmin).
     */
    record Slot(long confirmedFlush, boolean lost, String identity) {
    }

    private static final String IDENTITY = "coalesce(confirmed_flush_lsn::text, '-') || ' ' || coalesce(catalog_xmin::text, '-')"
            + " || ' ' || coalesce(restart_lsn::text, '-')";

    /** A write of the relay's own database, done only within this instance's term. */
    private interface Write {
        void run() throws SQLException;
    }

    /** Makes sure the slot exists and nothing committed outside of it is missed; throws to be retried with backoff. */
    void ensureSlotAndRecover() throws SQLException, PublishFailedException, InterruptedException {
        try (Connection sourceDb = connectSource(); Connection offsetsDb = connectOffsets()) {
            createMarkerTable(offsetsDb);
            withinTerm(offsetsDb, () -> { });
            // Checked again just before: a process frozen since the line above must not end the walsender of the
            // leader that took over meanwhile (the local lease check catches a process that was frozen).
            leadership.requireLeading();
            endDeposedWalsender(sourceDb);
            Optional<Slot> slot = slot(sourceDb);
            Optional<Long> stored = storedOffset(offsetsDb);
            String reason = slot.isEmpty() ? "slot " + source.slot() + " did not exist"
                    : slot.get().lost() ? "slot " + source.slot() + " was invalidated (its WAL is gone)"
                    : stored.isEmpty() ? "no stored offset: nothing says slot " + source.slot() + " was made before the first event"
                    : slot.get().confirmedFlush() > stored.get()
                            ? "slot " + source.slot() + " is confirmed past the relay's offset (" + slot.get().confirmedFlush()
                                    + " > " + stored.get() + "): it was recreated"
                            : null;
            if (reason != null) {
                withinTerm(offsetsDb, () -> mark(offsetsDb, reason));
            }
            Optional<String> pending = marker(offsetsDb);
            if (pending.isEmpty()) {
                return;
            }
            Log.warnf("Recovering events the WAL may not hold for the relay: %s", pending.get());
            if (slot.isPresent() && slot.get().lost()) {
                withinTerm(offsetsDb, () -> requireDropped(sourceDb, slot.get()));
            }
            if (slot.isEmpty() || slot.get().lost()) {
                requirePublication(sourceDb);
                // Checked, not held: making a slot waits for every transaction with an xid on the server, the
                // term's share lock too. A deposed leader's late make fails ("already exists"), or makes the
                // slot the new leader's recovery then finds, before it reads the table.
                withinTerm(offsetsDb, () -> { });
                execute(sourceDb, "SELECT pg_create_logical_replication_slot(?, 'pgoutput')", source.slot());
                Log.infof("Created replication slot %s", source.slot());
            }
            long published = publishOutboxTable(sourceDb);
            withinTerm(offsetsDb, () -> clear(offsetsDb));
            status.recovered(published, pending.get());
            Log.warnf("Recovery done: %d outbox rows republished from the table; streaming starts at slot %s",
                    published, source.slot());
        }
    }

    /**
     * The engine failed because pgoutput found no publication where the slot starts reading, while
     * the publication exists now: the slot was made before the publication (a slot made by hand, or
     * by a deployment, before order-service's migration ran). pgoutput decodes with the catalog as
     * it was at each WAL position, so such a slot can never be read: it is dropped, and the next
     * start makes a new one and recovers the events from the outbox table.
     */
    boolean dropSlotOlderThanItsPublication(Throwable engineFailure) throws SQLException {
        String missing = "publication \"" + source.publication() + "\" does not exist";
        boolean mentioned = false;
        for (Throwable t = engineFailure; t != null && !mentioned; t = t.getCause() == t ? null : t.getCause()) {
            mentioned = String.valueOf(t.getMessage()).contains(missing);
        }
        if (!mentioned) {
            return false;
        }
        try (Connection sourceDb = connectSource(); Connection offsetsDb = connectOffsets()) {
            Optional<Slot> slot = slot(sourceDb);
            if (!publicationExists(sourceDb) || slot.isEmpty()) {
                return false;
            }
            createMarkerTable(offsetsDb);
            // The failure was seen in this instance's term; a later term's slot is not this one's to judge.
            boolean[] dropped = new boolean[1];
            withinTerm(offsetsDb, () -> {
                dropped[0] = dropIfUnchanged(sourceDb, slot.get());
                if (dropped[0]) {
                    mark(offsetsDb, "slot " + source.slot() + " was made before publication " + source.publication()
                            + " and cannot be decoded");
                }
            });
            if (!dropped[0]) {
                Log.warnf("Slot %s changed or is in use since it was read; left as it is", source.slot());
                return false;
            }
            Log.warnf("Dropped slot %s: it was made before publication %s existed, so pgoutput cannot read it;"
                    + " a new one is made and the outbox table republished", source.slot(), source.publication());
            return true;
        }
    }

    /** A slot made before its publication can never be decoded: wait for order-service's migration instead. */
    private void requirePublication(Connection sourceDb) throws SQLException {
        if (!publicationExists(sourceDb)) {
            throw new IllegalStateException("publication " + source.publication() + " does not exist yet (order-service's"
                    + " migration creates it); the slot is made only after it, or pgoutput could never read it");
        }
    }

    private boolean publicationExists(Connection sourceDb) throws SQLException {
        try (PreparedStatement query = sourceDb.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            query.setString(1, source.publication());
            try (ResultSet rs = query.executeQuery()) {
                return rs.next();
            }
        }
    }

    private Connection connectSource() throws SQLException {
        return DriverManager.getConnection("jdbc:postgresql://" + source.host() + ":" + source.port() + "/" + source.database(),
                source.user(), source.password());
    }

    /**
     * A transaction here may hold the term's share lock, which the next leader's term waits for: if this
     * process freezes inside one, PostgreSQL ends it after the lease.
     */
    private Connection connectOffsets() throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", offsets.user());
        properties.setProperty("password", offsets.password());
        properties.setProperty("options", "-c idle_in_transaction_session_timeout=" + lease.toMillis());
        return DriverManager.getConnection(offsets.jdbcUrl(), properties);
    }

    /** The write, in one transaction with the check that this instance's term is still the current one. */
    private void withinTerm(Connection offsetsDb, Write write) throws SQLException {
        offsetsDb.setAutoCommit(false);
        try {
            leadership.requireTerm(offsetsDb);
            write.run();
            offsetsDb.commit();
        } catch (SQLException | RuntimeException e) {
            try {
                offsetsDb.rollback();
            } catch (SQLException rollback) {
                e.addSuppressed(rollback);
            }
            throw e;
        } finally {
            offsetsDb.setAutoCommit(true);
        }
    }

    /**
     * A walsender still reading the slot before this instance's engine starts is a deposed leader's
     * (or this process's last engine, not gone yet): it is ended, so that the old leader stops streaming
     * and the slot stands still while it is compared with the stored offset.
     */
    private void endDeposedWalsender(Connection sourceDb) throws SQLException, InterruptedException {
        Optional<Integer> pid = activePid(sourceDb);
        if (pid.isEmpty()) {
            return;
        }
        Log.warnf("Slot %s is still read by walsender %d (a deposed leader's): ending it before term %d streams",
                source.slot(), pid.get(), leadership.term());
        try (PreparedStatement terminate = sourceDb.prepareStatement("SELECT pg_terminate_backend(?)")) {
            terminate.setInt(1, pid.get());
            terminate.execute();
        } catch (SQLException e) {
            Log.warnf("Cannot end walsender %d (%s): the engine starts once it ends (wal_sender_timeout)", pid.get(),
                    e.getMessage());
            return;
        }
        long deadline = System.nanoTime() + walsenderTimeout.toNanos();
        while (activePid(sourceDb).filter(pid.get()::equals).isPresent()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("walsender " + pid.get() + " of slot " + source.slot()
                        + " still runs " + walsenderTimeout + " after it was ended");
            }
            Thread.sleep(50);
        }
    }

    private Optional<Integer> activePid(Connection sourceDb) throws SQLException {
        try (PreparedStatement query = sourceDb.prepareStatement(
                "SELECT active_pid FROM pg_replication_slots WHERE slot_name = ? AND database = current_database()"
                        + " AND active_pid IS NOT NULL")) {
            query.setString(1, source.slot());
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() ? Optional.of(rs.getInt(1)) : Optional.empty();
            }
        }
    }

    /**
     * Drops the slot only if it is still the one that was read and no walsender uses it: a slot made
     * since (by a newer leader) differs in position and catalog xmin and stays. True if dropped.
     */
    private boolean dropIfUnchanged(Connection sourceDb, Slot seen) throws SQLException {
        try (PreparedStatement drop = sourceDb.prepareStatement("SELECT pg_drop_replication_slot(slot_name)"
                + " FROM pg_replication_slots WHERE slot_name = ? AND database = current_database() AND NOT active AND "
                + IDENTITY + " = ?")) {
            drop.setString(1, source.slot());
            drop.setString(2, seen.identity());
            try (ResultSet rs = drop.executeQuery()) {
                return rs.next();
            }
        }
    }

    private void requireDropped(Connection sourceDb, Slot seen) throws SQLException {
        if (!dropIfUnchanged(sourceDb, seen)) {
            throw new IllegalStateException("slot " + source.slot() + " changed or is in use since it was read as lost;"
                    + " reading it again");
        }
    }

    private Optional<Slot> slot(Connection sourceDb) throws SQLException {
        try (PreparedStatement query = sourceDb.prepareStatement("""
                SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint, wal_status = 'lost', %s
                FROM pg_replication_slots WHERE slot_name = ? AND database = current_database()""".formatted(IDENTITY))) {
            query.setString(1, source.slot());
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() ? Optional.of(new Slot(rs.getLong(1), rs.getBoolean(2), rs.getString(3))) : Optional.empty();
            }
        }
    }

    /** The highest WAL position in Debezium's stored offset for this relay, if it has one. */
    private Optional<Long> storedOffset(Connection offsetsDb) throws SQLException {
        if (!tableExists(offsetsDb, offsets.table())) {
            return Optional.empty();
        }
        long highest = -1;
        try (Statement query = offsetsDb.createStatement();
             ResultSet rs = query.executeQuery("SELECT offset_key, offset_val FROM " + offsets.table())) {
            while (rs.next()) {
                if (rs.getString(1) == null || !rs.getString(1).contains("\"" + DebeziumProperties.TOPIC_PREFIX + "\"")) {
                    continue;
                }
                try {
                    JsonNode offset = JSON.readTree(rs.getString(2));
                    for (String key : List.of("lsn", "lsn_commit", "lsn_proc")) {
                        if (offset.path(key).canConvertToLong()) {
                            highest = Math.max(highest, offset.path(key).asLong());
                        }
                    }
                } catch (java.io.IOException e) {
                    throw new IllegalStateException("Unreadable offset in " + offsets.table() + ": " + rs.getString(2), e);
                }
            }
        }
        return highest < 0 ? Optional.empty() : Optional.of(highest);
    }

    private void createMarkerTable(Connection offsetsDb) throws SQLException {
        try (Statement ddl = offsetsDb.createStatement()) {
            ddl.execute("""
                    CREATE TABLE IF NOT EXISTS relay_slot_recovery (
                        slot_name varchar(64) PRIMARY KEY,
                        reason    text        NOT NULL,
                        since     timestamptz NOT NULL DEFAULT now())""");
        }
    }

    private void mark(Connection offsetsDb, String reason) throws SQLException {
        execute(offsetsDb, "INSERT INTO relay_slot_recovery (slot_name, reason) VALUES (?, ?) ON CONFLICT (slot_name) DO NOTHING",
                source.slot(), reason);
    }

    private Optional<String> marker(Connection offsetsDb) throws SQLException {
        try (PreparedStatement query = offsetsDb.prepareStatement(
                "SELECT reason || ' (since ' || since || ')' FROM relay_slot_recovery WHERE slot_name = ?")) {
            query.setString(1, source.slot());
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
            }
        }
    }

    /** The offset belonged to the old slot: without it, Debezium starts where the new slot stands. In the caller's transaction. */
    private void clear(Connection offsetsDb) throws SQLException {
        if (tableExists(offsetsDb, offsets.table())) {
            try (Statement delete = offsetsDb.createStatement()) {
                delete.executeUpdate("DELETE FROM " + offsets.table());
            }
        }
        execute(offsetsDb, "DELETE FROM relay_slot_recovery WHERE slot_name = ?", source.slot());
    }

    /** Every row still in the outbox, oldest first, in confirmed batches. */
    private long publishOutboxTable(Connection sourceDb) throws SQLException, PublishFailedException, InterruptedException {
        long published = 0;
        sourceDb.setAutoCommit(false); // a cursor, not the whole table in memory
        try (Statement query = sourceDb.createStatement()) {
            query.setFetchSize(BATCH);
            try (ResultSet rs = query.executeQuery("""
                    SELECT id::text, aggregatetype, aggregateid, type, schema_version, traceparent,
                           (extract(epoch FROM occurred_at) * 1000)::bigint, payload::text
                    FROM %s ORDER BY occurred_at""".formatted(source.table()))) {
                List<OutboundMessage> batch = new ArrayList<>(BATCH);
                long newest = 0;
                while (rs.next()) {
                    newest = rs.getLong(7);
                    batch.add(OutboundMessage.of(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getInt(5), rs.getString(6), newest, rs.getString(8)));
                    if (batch.size() == BATCH) {
                        published += publishConfirmed(batch, newest);
                        batch.clear();
                    }
                }
                published += publishConfirmed(batch, newest);
            }
        } finally {
            sourceDb.rollback();
            sourceDb.setAutoCommit(true);
        }
        return published;
    }

    /**
     * One batch of the table, confirmed; then the lag counts from its newest row (ordered by
     * {@code occurred_at}), as it does from the stream's commits. The table is not fenced by the slot:
     * a leader that lost its lock mid-recovery stops before its next batch (the new leader repeats the
     * recovery, its marker still set). At most one batch is published after the lock is gone: copies,
     * which the consumers' inboxes absorb.
     */
    private int publishConfirmed(List<OutboundMessage> batch, long newestMillis) throws PublishFailedException, InterruptedException {
        if (batch.isEmpty()) {
            return 0;
        }
        leadership.requireLeading();
        status.recordParked(publishTraced(batch));
        status.publishedUpTo(Instant.ofEpochMilli(newestMillis));
        return batch.size();
    }

    /** Each event republished in a publish span of its own, in the trace its row carries (as the stream does). */
    private List<BatchConfirms.Returned> publishTraced(List<OutboundMessage> batch)
            throws PublishFailedException, InterruptedException {
        RelayTracing.Batch traced = tracing.publishing(batch);
        try {
            List<BatchConfirms.Returned> parked = publisher.publish(traced.messages());
            traced.confirmed(parked);
            return parked;
        } catch (PublishFailedException | InterruptedException | RuntimeException e) {
            traced.failed(e);
            throw e;
        }
    }

    private static boolean tableExists(Connection c, String table) throws SQLException {
        try (PreparedStatement query = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            query.setString(1, table);
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    private static void execute(Connection c, String sql, String... parameters) throws SQLException {
        try (PreparedStatement statement = c.prepareStatement(sql)) {
            for (int i = 0; i < parameters.length; i++) {
                statement.setString(i + 1, parameters[i]);
            }
            statement.execute();
        }
    }
}
