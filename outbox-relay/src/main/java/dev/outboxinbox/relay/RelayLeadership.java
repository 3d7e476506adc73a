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
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
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
 *       that walsender ends ({@code wal_sender_timeout}). Two relays never read one slot at once.</li>
 * </ol>
 * What a deposed leader had in hand, published but not yet committed as its offset, is published again
 * by the new one: duplicates of at most one batch, which the consumers' inboxes absorb. Nothing is lost:
 * the new leader starts from the last committed offset, and a deposed leader only ever commits offsets
 * of events the broker confirmed.
 */
@ApplicationScoped
class RelayLeadership {

    /** Who holds the lock, as the standby sees it. */
    record Holder(String name, Instant since) {
    }

    private final RelayConfig.Offsets offsets;
    private final RelayConfig.Leadership settings;
    private final String slot;
    private final String instance;
    private final ScheduledExecutorService heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "relay-leadership");
        thread.setDaemon(true);
        return thread;
    });
    private final Object lock = new Object();
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
            leader = true;
            leaderSince = Instant.now();
            holder = new Holder(instance, leaderSince);
            problem = null;
            asked = true;
        }
        long period = settings.heartbeat().toMillis();
        heartbeat.schedule(this::beat, period, TimeUnit.MILLISECONDS);
        return true;
    }

    /** The leader's heartbeat: the session answers and still holds the lock, or this instance steps down. */
    private void beat() {
        if (!leader) {
            return;
        }
        String lost;
        try {
            synchronized (lock) {
                lost = session == null ? "the leadership session is closed" : checkLockHeld();
            }
        } catch (RuntimeException e) {
            // Never let the heartbeat die quietly: a leader without one could outlive its lease unaware.
            lost = "the heartbeat failed: " + e;
        }
        if (lost == null) {
            heartbeat.schedule(this::beat, settings.heartbeat().toMillis(), TimeUnit.MILLISECONDS);
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
            lastStepDown = Instant.now() + ": " + reason;
            notBeforeNanos = System.nanoTime() + settings.heartbeat().multipliedBy(3).toNanos();
            closeSession();
        }
        Log.errorf("Stepping down as the relay of slot %s: %s. The engine stops; a standby takes over", slot, reason);
        onLost.run();
    }

    /** On shutdown: the lock goes with the session, so a standby takes over at its next heartbeat. */
    void release() {
        heartbeat.shutdownNow();
        synchronized (lock) {
            leader = false;
            closeSession();
        }
    }

    boolean isLeader() {
        return leader;
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
                    return new Holder(name.startsWith(APPLICATION_PREFIX) ? name.substring(APPLICATION_PREFIX.length()) : name,
                            rs.getTimestamp(2).toInstant());
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
    private int timeoutSeconds() {
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
