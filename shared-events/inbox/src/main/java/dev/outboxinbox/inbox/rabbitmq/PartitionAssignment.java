package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.ChannelSettings;
import io.quarkus.logging.Log;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.eclipse.microprofile.config.Config;

/**
 * Which partitions this instance reads, agreed with the other instances of the same consumer through
 * PostgreSQL, the database they already share. Each instance keeps one session open with
 * {@code application_name = inbox/<consumer>/<instance>}: the sessions are the membership list. The
 * instances sorted by name, the one at index {@code i} of {@code n} should read the partitions
 * {@code p} with {@code p % n == i}; it reads one only while it holds that partition's session-level
 * advisory lock, and it unlocks one only after it stopped reading it and acked what it had in hand. So a
 * partition passes from one instance to the next without two ever reading it at once, and the one
 * taking it over starts where the other left off, in order.
 *
 * <p>An instance that dies loses its session, and its locks with it, at once ({@code kill -9} closes
 * the socket); one frozen or cut off by the network loses them after {@code lease}, the session's
 * {@code idle_session_timeout}. This class only decides and locks; {@link InboxConsumer} subscribes,
 * drains and unsubscribes, from one thread.
 *
 * <p>Stopping, the instance keeps its locks while it drains: its session is renamed
 * {@code inbox-out/<consumer>/<instance>} (so the others no longer count it among the members and
 * plan to take its partitions) and kept busy every heartbeat (so that the lease does not end it),
 * and the locks go only with the session, once what was in hand is applied and acked.
 *
 * <p>Two instances with one name would be read as one member: the second is refused at start.
 */
final class PartitionAssignment implements AutoCloseable {

    /** What one heartbeat found: the partitions to give up (after draining them), and those to try to take. */
    record Plan(SortedSet<Integer> release, SortedSet<Integer> acquire, List<String> members) {
    }

    private static final String PREFIX = "inbox/";
    /** The session of an instance that is stopping: it holds its locks until it drained, and is no member. */
    private static final String LEAVING_PREFIX = "inbox-out/";

    private final ChannelSettings.Partitioning settings;
    private final int count;
    private final String consumer;
    private final String instance;
    private final String jdbcUrl;
    private final Properties credentials;
    private final SortedSet<Integer> owned = new TreeSet<>();
    private Connection session;
    private boolean leaving;
    /** Out of the members because this instance cannot apply (its database refuses its writes). */
    private boolean benched;
    /** Since when (System.nanoTime()) this instance cannot apply; null while it can. */
    private Long unableSince;
    private volatile List<String> members = List.of();

    PartitionAssignment(ChannelSettings config, Config datasource) {
        this.settings = config.partitioning();
        this.count = settings.count();
        this.consumer = config.consumer();
        this.instance = instanceName(settings.instance(), PREFIX + consumer + "/");
        this.jdbcUrl = datasource.getValue("quarkus.datasource.jdbc.url", String.class);
        this.credentials = new Properties();
        datasource.getOptionalValue("quarkus.datasource.username", String.class).ifPresent(u -> credentials.setProperty("user", u));
        datasource.getOptionalValue("quarkus.datasource.password", String.class).ifPresent(p -> credentials.setProperty("password", p));
        if (settings.heartbeat().multipliedBy(3).compareTo(settings.lease()) > 0) {
            throw new IllegalArgumentException(config.key("partitioning.heartbeat") + " (" + settings.heartbeat() + ") must be at most a"
                    + " third of " + config.key("partitioning.lease") + " (" + settings.lease() + "): an instance must notice a failing"
                    + " session before its locks are given to another");
        }
    }

    /**
     * At start: refuses a name another running instance of this consumer already has (its lock session
     * would be read as this one's, and two instances would read the same partitions' share).
     *
     * @throws IllegalStateException naming the other session, if the name is taken
     */
    void refuseTakenName() {
        Properties properties = new Properties();
        properties.putAll(credentials);
        properties.setProperty("connectTimeout", String.valueOf(timeoutSeconds()));
        properties.setProperty("socketTimeout", String.valueOf(timeoutSeconds() * 2));
        try (Connection connection = DriverManager.getConnection(jdbcUrl, properties);
             PreparedStatement query = connection.prepareStatement("""
                     SELECT application_name, client_addr, backend_start FROM pg_stat_activity                      WHERE datname = current_database() AND application_name IN (?, ?)""")) {
            query.setString(1, applicationPrefix() + instance);
            query.setString(2, LEAVING_PREFIX + consumer + "/" + instance);
            try (ResultSet rs = query.executeQuery()) {
                if (rs.next()) {
                    throw new IllegalStateException("inbox.partitioning.instance '" + instance + "' is taken: another instance of "
                            + consumer + " runs under that name (session '" + rs.getString(1) + "' from " + rs.getString(2)
                            + " since " + rs.getString(3) + "). Give each instance a name of its own, or leave"
                            + " inbox.partitioning.instance unset (host name/pid)");
                }
            }
        } catch (SQLException e) {
            // The database is not there yet: the lock session's own start will say so, and retry.
            Log.warnf("Partitions: could not check that the name %s is free: %s", instance, e.getMessage());
        }
    }

    /**
     * One heartbeat: opens the session if needed, proves it still holds its locks, reads the members.
     * Throws when the session failed: every lock went with it; the caller calls {@link #lost()}
     * (what it reads meanwhile: {@link InboxConsumer}).
     *
     * <p>Membership also proves that the instance can apply: {@code applying} false (its database
     * refuses its writes: the inbox's probe, a real write on the service's pool, fails) for longer than
     * the lease while another member is there, and it leaves the members (its session renamed
     * {@code inbox-out/…}; its partitions released, each drained first); it rejoins once it applies again.
     */
    Plan plan(boolean applying) throws SQLException {
        if (session == null) {
            session = connect();
        }
        SortedSet<Integer> held = held();
        if (!held.containsAll(owned)) {
            throw new SQLException("the locks of partitions " + difference(owned, held) + " are no longer held by this session");
        }
        if (applying) {
            unableSince = null;
        } else if (unableSince == null) {
            unableSince = System.nanoTime();
        }
        List<String> names = memberNames(benched);
        if (benched && applying) {
            rename(applicationPrefix() + instance);
            benched = false;
            Log.infof("Partitions: %s applies again; it rejoins the instances of %s", instance, consumer);
            names = memberNames(false);
        } else if (!benched && unableSince != null && System.nanoTime() - unableSince > settings.lease().toNanos()
                && names.size() > 1) {
            rename(LEAVING_PREFIX + consumer + "/" + instance);
            benched = true;
            Log.errorf("Partitions: %s cannot apply (its database refuses its writes) for longer than the lease (%s):"
                    + " it leaves the instances, its partitions %s go to the others once drained", instance, settings.lease(), owned);
            names = memberNames(true);
        }
        int index = names.indexOf(instance);
        int n = names.size();
        SortedSet<Integer> mine = new TreeSet<>();
        for (int p = 0; p < count && !benched; p++) {
            if (p % n == index) {
                mine.add(p);
            }
        }
        members = names;
        return new Plan(difference(owned, mine), difference(mine, owned), names);
    }

    /** Takes a partition if no other instance holds it (the one giving it up unlocks it once drained). */
    boolean tryLock(int partition) throws SQLException {
        try (PreparedStatement lock = session.prepareStatement("SELECT pg_try_advisory_lock(hashtextextended(?, 0))")) {
            lock.setQueryTimeout(timeoutSeconds());
            lock.setString(1, lockName(partition));
            try (ResultSet rs = lock.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    owned.add(partition);
                    return true;
                }
                return false;
            }
        }
    }

    /** Gives a partition up: call only once nothing read from it is left unacked. */
    void unlock(int partition) throws SQLException {
        owned.remove(partition);
        try (PreparedStatement unlock = session.prepareStatement("SELECT pg_advisory_unlock(hashtextextended(?, 0))")) {
            unlock.setQueryTimeout(timeoutSeconds());
            unlock.setString(1, lockName(partition));
            unlock.executeQuery().close();
        }
    }

    /**
     * Stopping: this instance leaves the members but keeps its locks while it drains. The first call
     * renames the session {@code inbox-out/…}; each call (every heartbeat while draining) keeps it
     * busy, so that its lease does not run out before the partitions are drained.
     */
    void leave() throws SQLException {
        if (session == null) {
            return;
        }
        if (!leaving) {
            rename(LEAVING_PREFIX + consumer + "/" + instance);
            leaving = true;
            Log.infof("Partitions: %s is stopping; it keeps %s locked until what it has in hand is applied and acked",
                    instance, owned);
        }
        SortedSet<Integer> held = held();
        if (!held.containsAll(owned)) {
            SortedSet<Integer> gone = difference(owned, held);
            owned.retainAll(held);
            throw new SQLException("while draining, the locks of partitions " + gone + " were lost");
        }
    }

    /** The session failed or is given up: it held every lock, so none is held now. */
    void lost() {
        owned.clear();
        leaving = false;
        benched = false;
        members = List.of();
        close();
    }

    SortedSet<Integer> owned() {
        return new TreeSet<>(owned);
    }

    List<String> members() {
        return members;
    }

    String instance() {
        return instance;
    }

    int count() {
        return count;
    }

    /** How long a partition may take to drain before it is given up anyway: well within the lease. */
    Duration drainTimeout() {
        return settings.lease().dividedBy(3);
    }

    Duration heartbeat() {
        return settings.heartbeat();
    }

    Duration lease() {
        return settings.lease();
    }

    private SortedSet<Integer> held() throws SQLException {
        SortedSet<Integer> held = new TreeSet<>();
        try (PreparedStatement query = session.prepareStatement("""
                SELECT p FROM generate_series(0, ? - 1) AS p WHERE EXISTS (SELECT FROM pg_locks \
                WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid() AND objsubid = 1 \
                AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(? || p, 0))""")) {
            query.setQueryTimeout(timeoutSeconds());
            query.setInt(1, count);
            query.setString(2, lockName(""));
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    held.add(rs.getInt(1));
                }
            }
        }
        return held;
    }

    private void rename(String applicationName) throws SQLException {
        try (PreparedStatement rename = session.prepareStatement("SELECT set_config('application_name', ?, false)")) {
            rename.setQueryTimeout(timeoutSeconds());
            rename.setString(1, applicationName);
            rename.executeQuery().close();
        }
    }

    /** The members' names; this instance's among them unless {@code out}. */
    private List<String> memberNames(boolean out) throws SQLException {
        List<String> names = new ArrayList<>();
        try (PreparedStatement query = session.prepareStatement("""
                SELECT application_name FROM pg_stat_activity \
                WHERE datname = current_database() AND starts_with(application_name, ?) ORDER BY application_name""")) {
            query.setQueryTimeout(timeoutSeconds());
            query.setString(1, applicationPrefix());
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    names.add(rs.getString(1).substring(applicationPrefix().length()));
                }
            }
        }
        if (!out && !names.contains(instance)) {
            throw new SQLException("this instance's session (" + applicationPrefix() + instance + ") is not among the members");
        }
        return names;
    }

    private String lockName(int partition) {
        return lockName(String.valueOf(partition));
    }

    private String lockName(String partition) {
        return PREFIX + consumer + ":partition:" + partition;
    }

    private String applicationPrefix() {
        return PREFIX + consumer + "/";
    }

    private Connection connect() throws SQLException {
        Properties properties = new Properties();
        properties.putAll(credentials);
        properties.setProperty("ApplicationName", applicationPrefix() + instance);
        properties.setProperty("tcpKeepAlive", "true");
        properties.setProperty("connectTimeout", String.valueOf(timeoutSeconds()));
        properties.setProperty("socketTimeout", String.valueOf(timeoutSeconds() * 2));
        Connection connection = DriverManager.getConnection(jdbcUrl, properties);
        try (Statement statement = connection.createStatement()) {
            // The lease: a session silent this long (its instance frozen or cut off) is ended by PostgreSQL.
            statement.execute("SET idle_session_timeout = '" + settings.lease().toMillis() + "ms'");
        } catch (SQLException e) {
            connection.close();
            throw new SQLException("cannot set the partition locks' lease (idle_session_timeout, PostgreSQL 14+): "
                    + e.getMessage(), e);
        }
        Log.infof("Partitions: %s joins the instances of %s (%d partitions)", instance, consumer, count);
        return connection;
    }

    private int timeoutSeconds() {
        return (int) Math.max(1, settings.lease().dividedBy(3).toSeconds());
    }

    private static SortedSet<Integer> difference(Set<Integer> from, Set<Integer> minus) {
        return from.stream().filter(p -> !minus.contains(p)).collect(Collectors.toCollection(TreeSet::new));
    }

    @Override
    public void close() {
        if (session != null) {
            try {
                session.close();
            } catch (SQLException e) {
                Log.debugf("Partitions: closing the session: %s", e.getMessage());
            }
            session = null;
        }
    }

    /** PostgreSQL keeps 63 bytes of an application_name: the members are read back from it, so the name must fit. */
    private static final int APPLICATION_NAME_BYTES = 63;

    /**
     * The configured name, which must fit whole in the session's application_name after {@code prefix};
     * by default host/pid, the host name shortened to fit.
     */
    static String instanceName(Optional<String> configured, String prefix) {
        int room = APPLICATION_NAME_BYTES - prefix.getBytes(StandardCharsets.UTF_8).length;
        if (configured.isPresent()) {
            String name = configured.get();
            if (name.isBlank() || name.getBytes(StandardCharsets.UTF_8).length > room) {
                throw new IllegalArgumentException("inbox.partitioning.instance '" + name + "' must be 1 to " + room
                        + " bytes: it is read back from the lock session's application_name ('" + prefix + "…', 63 bytes at most)");
            }
            return name;
        }
        String pid = "/" + ProcessHandle.current().pid();
        if (room < pid.length() + 1) {
            throw new IllegalArgumentException("no room for this instance's name behind '" + prefix + "' in 63 bytes: set"
                    + " inbox.partitioning.instance to a name of at most " + Math.max(0, room) + " bytes, or shorten the consumer name");
        }
        String host = hostName().replaceAll("[^\\x20-\\x7e]", "?");
        return host.substring(0, Math.min(host.length(), room - pid.length())) + pid;
    }

    private static String hostName() {
        String fromEnvironment = System.getenv("HOSTNAME");
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return fromEnvironment;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "consumer";
        }
    }
}
