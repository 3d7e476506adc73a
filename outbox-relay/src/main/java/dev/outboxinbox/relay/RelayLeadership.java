package dev.outboxinbox.relay;

import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One relay streams from a slot; every other instance configured for the same slot is its standby and
 * takes over when the leader dies or loses its database. Three fences, each covering what the one
 * before it cannot:
 * <ol>
 *   <li><b>A lock.</b> A session-level advisory lock in the relay's own database, keyed by the slot's
 *       name: only its holder recovers from the outbox table and runs the engine. PostgreSQL releases
 *       it when the holder's session ends; a {@code kill -9} ends it at once (the kernel closes the
 *       socket), and the standby, asking every {@code relay.leadership.heartbeat}, has it next.</li>
 *   <li><b>A lease.</b> A leader cut off by the network, or frozen, does not close its socket, and
 *       TCP would keep the session (and the lock) for hours. The session is given an
 *       {@code idle_session_timeout} of {@code relay.leadership.lease}: PostgreSQL ends it once it goes
 *       quiet that long. The leader speaks on it every heartbeat, and the first heartbeat that fails
 *       makes it step down (its engine closed, no more publishing) well before the lease runs out.</li>
 *   <li><b>The slot.</b> PostgreSQL lets one walsender use a slot at a time. If a deposed leader's
 *       walsender still lives, the new leader's engine cannot start and is retried with backoff until
 *       that walsender ends. A new leader does not wait for {@code wal_sender_timeout}: it ends the slot's
 *       walsender itself ({@code pg_terminate_backend}) before its engine starts ({@link SlotRecovery}).</li>
 * </ol>
 * <p>And a <b>term</b>: taking the lock increments the slot's epoch in {@code relay_leadership}, in the
 * session that holds the lock. Every write a deposed leader could still make after it lost the lock (it
 * froze, or had not noticed yet) is conditional on its term, in the same transaction as the write:
 * the offsets ({@link FencedOffsetBackingStore}), the recovery marker and the slot's drop and creation
 * ({@link SlotRecovery}). The check takes a share lock on the term's row, so the next leader's increment
 * waits for a write in flight and every later one fails: a deposed leader can publish copies, never
 * move what the new leader relies on.
 * What a deposed leader had in hand, published but not yet committed as its offset, is published again
 * by the new one: duplicates of at most one batch and what it confirmed within one offset commit interval
 * (relay.offsets.commit-interval), which the consumers' inboxes absorb. Nothing is lost:
 * the new leader starts from the last committed offset, and a deposed leader only ever commits offsets
 * of events the broker confirmed.
 */
@ApplicationScoped
class RelayLeadership {

    /** Who holds the lock, as the standby sees it. */
    record Holder(String name, Instant since) {
    }

    /** This instance's term is over: what it was about to write or publish is refused. */
    static final class Deposed extends IllegalStateException {
        Deposed(String message) {
            super(message);
        }
    }

    /** The table of terms, one row per slot, in the relay's own database. */
    static final String TERMS_TABLE = "relay_leadership";

    private final RelayConfig.Offsets offsets;
    private final RelayConfig.Leadership settings;
    private final String slot;
    private final String instance;
    private final ScheduledExecutorService heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "relay-leadership");
        thread.setDaemon(true);
        return thread;
    });
    /** Runs {@link #onLost}: closing the engine may take a while, and must not hold up the next term's heartbeat. */
    private final ExecutorService stopper = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "relay-step-down");
        thread.setDaemon(true);
        return thread;
    });
    private final Object lock = new Object();
    private ScheduledFuture<?> beating;
    /** The epoch of this instance's current (or last) term. */
    private volatile long term;
    /** When the lock was last confirmed held (System.nanoTime() before the query was sent). */
    private volatile long confirmedAtNanos;
    private Connection session;
    private volatile boolean leader;
    /** Whether this instance has asked for the lock at least once: until then it is neither leader nor standby. */
    private volatile boolean asked;
    private volatile Instant leaderSince;
    private volatile Holder holder;
    private volatile String problem;
    private volatile String lastStepDown;
    /** A deposed leader asks again only after this: the standby, asking all along, goes first. */
    private volatile long notBeforeNanos;
    private volatile Runnable onLost = () -> { };

    RelayLeadership(RelayConfig config) {
        this.offsets = config.offsets();
        this.settings = config.leadership();
        this.slot = config.source().slot();
        this.instance = settings.instance().orElseGet(() -> hostName() + "/" + ProcessHandle.current().pid());
        requireShorterThan(settings.heartbeat(), settings.lease());
    }

    /** What to do the moment this instance stops leading: close the engine, so nothing more is published. */
    void onLost(Runnable action) {
        this.onLost = action;
    }

    /**
     * Returns once this instance holds the lock (at once if it already does); until then asks every
     * heartbeat. A database that cannot be reached is retried the same way, and reported.
     */
    void awaitLeadership(BooleanSupplier stopping) throws InterruptedException {
        boolean announced = false;
        while (!stopping.getAsBoolean()) {
            if (leader) {
                return;
            }
            long wait = notBeforeNanos - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
                continue;
            }
            try {
                if (tryAcquire()) {
                    Log.infof("Leading: %s holds the lock for slot %s; streaming starts", instance, slot);
                    return;
                }
                if (!announced) {
                    Holder current = holder;
                    Log.infof("Standby: slot %s is relayed by %s; taking over when it stops", slot,
                            current == null ? "another instance" : current.name());
                    announced = true;
                }
            } catch (SQLException e) {
                problem = "cannot reach the relay's database for leadership: " + e.getMessage();
                Log.warnf("Leadership: %s; trying again in %s", problem, settings.heartbeat());
                closeSession();
            }
            Thread.sleep(settings.heartbeat().toMillis());
        }
    }

    private boolean tryAcquire() throws SQLException {
        synchronized (lock) {
            if (session == null || !session.isValid(timeoutSeconds())) {
                closeSession();
                session = connect();
            }
            try (PreparedStatement acquire = session.prepareStatement("SELECT pg_try_advisory_lock(hashtextextended(?, 0))")) {
                acquire.setString(1, lockName());
                try (ResultSet rs = acquire.executeQuery()) {
                    rs.next();
                    if (!rs.getBoolean(1)) {
                        holder = readHolder();
                        problem = null;
                        asked = true;
                        return false;
                    }
                }
            }
            long askedAt = System.nanoTime();
            try {
                term = beginTerm();
            } catch (SQLException e) {
                closeSession(); // the lock goes with it: no leader without a term
                throw e;
            }
            confirmedAtNanos = askedAt;
            leader = true;
            leaderSince = Instant.now();
            holder = new Holder(instance, leaderSince);
            problem = null;
            asked = true;
            if (beating != null) {
                beating.cancel(false);
            }
            beating = heartbeat.schedule(this::beat, settings.heartbeat().toMillis(), TimeUnit.MILLISECONDS);
        }
        Log.infof("Term %d of slot %s begins", term, slot);
        return true;
    }

    /**
     * Increments the slot's epoch in the session that holds the lock. Waits for a deposed leader's
     * fenced write in flight (it holds the row's share lock), at most a third of the lease; after it,
     * every write of an earlier term is refused.
     */
    private long beginTerm() throws SQLException {
        try (Statement ddl = session.createStatement()) {
            ddl.setQueryTimeout(timeoutSeconds());
            ddl.execute("CREATE TABLE IF NOT EXISTS " + TERMS_TABLE + " (slot_name varchar(64) PRIMARY KEY,"
                    + " epoch bigint NOT NULL, holder text NOT NULL, since timestamptz NOT NULL DEFAULT now())");
        }
        try (PreparedStatement next = session.prepareStatement("INSERT INTO " + TERMS_TABLE + " AS t (slot_name, epoch, holder)"
                + " VALUES (?, 1, ?) ON CONFLICT (slot_name) DO UPDATE SET epoch = t.epoch + 1, holder = EXCLUDED.holder,"
                + " since = now() RETURNING epoch")) {
            next.setQueryTimeout(timeoutSeconds());
            next.setString(1, slot);
            next.setString(2, instance);
            try (ResultSet rs = next.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * Refuses a write of a term that is over. Call it inside the write's transaction, on the relay's own
     * database: it takes a share lock on the term's row, so the next leader's term cannot begin before
     * that transaction ends, and once it has begun this fails.
     */
    void requireTerm(Connection offsetsDb) throws SQLException {
        requireLeading();
        try (PreparedStatement query = offsetsDb.prepareStatement(
                "SELECT epoch FROM " + TERMS_TABLE + " WHERE slot_name = ? FOR SHARE")) {
            query.setQueryTimeout(timeoutSeconds());
            query.setString(1, slot);
            try (ResultSet rs = query.executeQuery()) {
                long current = rs.next() ? rs.getLong(1) : -1;
                if (current != term) {
                    throw new Deposed("deposed: term " + term + " of slot " + slot + " is over (the current term is "
                            + current + ")");
                }
            }
        }
    }

    /**
     * Refuses to go on as leader once this instance stepped down, or once its lock has not been confirmed
     * for longer than the lease allows (a process that was frozen and has just woken): checked before the
     * engine starts and before every batch is published.
     */
    void requireLeading() {
        if (leader && leaseLapsed()) {
            stepDown("no heartbeat confirmed the lock for " + Duration.ofNanos(System.nanoTime() - confirmedAtNanos)
                    + " (the lease is " + settings.lease() + "): this process was frozen or starved");
        }
        if (!leader) {
            throw new Deposed("deposed: this instance no longer leads slot " + slot
                    + (lastStepDown == null ? "" : " (" + lastStepDown + ")"));
        }
    }

    /** Past this, PostgreSQL may have ended the lock's session while this process could not tell. */
    private boolean leaseLapsed() {
        return System.nanoTime() - confirmedAtNanos > settings.lease().minus(settings.heartbeat()).toNanos();
    }

    long term() {
        return term;
    }

    /** The leader's heartbeat: the session answers and still holds the lock, or this instance steps down. */
    private void beat() {
        if (!leader) {
            return;
        }
        String lost;
        long askedAt = System.nanoTime();
        try {
            synchronized (lock) {
                lost = session == null ? "the leadership session is closed" : checkLockHeld();
            }
            if (lost == null) {
                confirmedAtNanos = askedAt;
            }
        } catch (RuntimeException e) {
            // Never let the heartbeat die quietly: a leader without one could outlive its lease unaware.
            lost = "the heartbeat failed: " + e;
        }
        if (lost == null) {
            synchronized (lock) {
                if (leader) {
                    beating = heartbeat.schedule(this::beat, settings.heartbeat().toMillis(), TimeUnit.MILLISECONDS);
                }
            }
            return;
        }
        stepDown(lost);
    }

    /** Null while this session holds the lock; otherwise why not. */
    private String checkLockHeld() {
        try (PreparedStatement held = session.prepareStatement("""
                SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid() \
                AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(?, 0)""")) {
            held.setQueryTimeout(timeoutSeconds());
            held.setString(1, lockName());
            try (ResultSet rs = held.executeQuery()) {
                rs.next();
                return rs.getLong(1) == 0 ? "the lock is no longer held by this session" : null;
            }
        } catch (SQLException e) {
            return "the leadership session failed: " + e.getMessage();
        }
    }

    private void stepDown(String reason) {
        synchronized (lock) {
            if (!leader) {
                return;
            }
            leader = false;
            holder = null;
            lastStepDown = Instant.now() + ": deposed from term " + term + ", stopped streaming: " + reason;
            notBeforeNanos = System.nanoTime() + settings.heartbeat().multipliedBy(3).toNanos();
            closeSession();
        }
        Log.errorf("Deposed: stepping down as the relay of slot %s (term %d): %s. The engine stops streaming; a standby"
                + " takes over", slot, term, reason);
        try {
            stopper.execute(onLost);
        } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
            onLost.run(); // released already: the shutdown closes the engine too
        }
    }

    /** On shutdown: the lock goes with the session, so a standby takes over at its next heartbeat. */
    void release() {
        heartbeat.shutdownNow();
        stopper.shutdownNow();
        synchronized (lock) {
            leader = false;
            closeSession();
        }
    }

    /** Holds the lock, confirmed within the lease. */
    boolean isLeader() {
        return leader && !leaseLapsed();
    }

    /** Waiting for a leader that holds the lock: it has asked, and was told no. */
    boolean isStandby() {
        return asked && !leader;
    }

    String instance() {
        return instance;
    }

    Holder holder() {
        return holder;
    }

    Instant leaderSince() {
        return leaderSince;
    }

    /** Why this instance cannot take part in the election (its database unreachable), or null. */
    String problem() {
        return problem;
    }

    /** When and why this instance last stopped leading, or null. */
    String lastStepDown() {
        return lastStepDown;
    }

    private Holder readHolder() {
        try (PreparedStatement query = session.prepareStatement("""
                SELECT a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(?, 0)""")) {
            query.setString(1, lockName());
            try (ResultSet rs = query.executeQuery()) {
                if (rs.next()) {
                    String name = rs.getString(1);
                    // Another role's session (an administrator's, holding the lock by hand) shows no backend_start.
                    java.sql.Timestamp since = rs.getTimestamp(2);
                    return new Holder(name == null ? "another session" : name.startsWith(APPLICATION_PREFIX)
                            ? name.substring(APPLICATION_PREFIX.length()) : name, since == null ? null : since.toInstant());
                }
            }
        } catch (SQLException e) {
            Log.debugf("Leadership: cannot tell who leads: %s", e.getMessage());
        }
        return null;
    }

    private static final String APPLICATION_PREFIX = "outbox-relay/";

    private Connection connect() throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", offsets.user());
        properties.setProperty("password", offsets.password());
        // Shown in pg_stat_activity: the standby reads the leader's name from it.
        properties.setProperty("ApplicationName", APPLICATION_PREFIX + instance);
        properties.setProperty("tcpKeepAlive", "true");
        properties.setProperty("connectTimeout", String.valueOf(timeoutSeconds()));
        properties.setProperty("socketTimeout", String.valueOf(Math.max(timeoutSeconds() * 2, 1)));
        Connection connection = DriverManager.getConnection(offsets.jdbcUrl(), properties);
        try (Statement statement = connection.createStatement()) {
            statement.execute("SET idle_session_timeout = '" + settings.lease().toMillis() + "ms'");
        } catch (SQLException e) {
            // PostgreSQL before 14 has no idle_session_timeout: the lock then waits for TCP to give up on a lost leader.
            Log.warnf("Leadership: no lease on the lock's session (%s); a leader cut off by the network holds the lock"
                    + " until TCP gives up on it", e.getMessage());
            connection.close();
            connection = DriverManager.getConnection(offsets.jdbcUrl(), properties);
        }
        return connection;
    }

    private String lockName() {
        return "outbox-relay:" + slot;
    }

    /** A heartbeat's query may take a third of the lease, so a slow one still ends before the lease does. */
    int timeoutSeconds() {
        return (int) Math.max(1, settings.lease().dividedBy(3).toSeconds());
    }

    private void closeSession() {
        if (session != null) {
            try {
                session.close();
            } catch (SQLException e) {
                Log.debugf("Leadership: closing the session: %s", e.getMessage());
            }
            session = null;
        }
    }

    private static String hostName() {
        String fromEnvironment = System.getenv("HOSTNAME");
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return fromEnvironment;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "relay";
        }
    }

    static void requireShorterThan(Duration heartbeat, Duration lease) {
        if (heartbeat.multipliedBy(3).compareTo(lease) > 0) {
            throw new IllegalArgumentException("relay.leadership.heartbeat (" + heartbeat + ") must be at most a third of"
                    + " relay.leadership.lease (" + lease + "): the leader must notice a failing session before its lease ends");
        }
    }
}
