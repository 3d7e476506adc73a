package dev.outboxinbox.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How far behind the relay is, read from the producer's database, never from the relay's own
 * belief: the WAL its slot retains, and the age of the oldest outbox row committed after the last
 * event published. That last event is this process's newest when it has published one; otherwise
 * (just restarted, or a standby) the commit time in the stored offset ({@code ts_usec}, written by
 * whichever instance led, only past confirmed events); with neither, every row counts (nothing was
 * ever published). Sampled at most every two seconds (a scrape and a health check share it).
 */
@ApplicationScoped
class RelayLag {

    private static final long SAMPLE_MILLIS = 2_000;
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * A lag read never waits long: 5 s to connect, 3 s for the query (a lock on the outbox, from a
     * migration or VACUUM FULL, would otherwise hold it forever), 10 s for any socket read.
     */
    private static final Map<String, String> TIMEOUTS = Map.of("connectTimeout", "5", "loginTimeout", "5",
            "socketTimeout", "10", "options", "-c statement_timeout=3000");

    /** Retained bytes and the oldest unpublished row's age; -1 where unknown (no slot, database away). */
    record Sample(long retainedWalBytes, double oldestUnpublishedSeconds, String problem) {
    }

    private final RelayConfig config;
    private final RelayStatus status;
    private volatile Sample last = new Sample(-1, -1, "not sampled yet");
    private volatile long sampledAt;
    private final AtomicBoolean sampling = new AtomicBoolean();

    RelayLag(RelayConfig config, RelayStatus status) {
        this.config = config;
        this.status = status;
    }

    /**
     * The newest sample. One caller at a time reads a new one, bounded by {@link #TIMEOUTS}; the
     * others get the last one at once, so a slow database never piles up health checks and scrapes.
     */
    Sample sample() {
        if (System.currentTimeMillis() - sampledAt > SAMPLE_MILLIS && sampling.compareAndSet(false, true)) {
            try {
                last = read();
                sampledAt = System.currentTimeMillis();
            } finally {
                sampling.set(false);
            }
        }
        return last;
    }

    /** Whether either figure is beyond the configured threshold. */
    boolean exceeded(Sample sample) {
        RelayConfig.Health limits = config.health();
        return sample.retainedWalBytes() > limits.maxRetainedWalBytes()
                || sample.oldestUnpublishedSeconds() > limits.maxUnpublishedAge().toSeconds();
    }

    private Sample read() {
        RelayConfig.Source source = config.source();
        // Rows committed after the newest event published are not published yet (a row's occurred_at
        // is set before its commit, so a long transaction can be missed: this is a lower bound).
        Instant publishedUpTo;
        try {
            publishedUpTo = status.publishedUpTo() != null ? status.publishedUpTo() : storedCommitTime().orElse(Instant.EPOCH);
        } catch (SQLException | IOException e) {
            return new Sample(-1, -1, "cannot read the stored offset: " + e.getMessage());
        }
        Properties properties = new Properties();
        properties.putAll(TIMEOUTS);
        properties.setProperty("user", source.user());
        properties.setProperty("password", source.password());
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + source.host() + ":" + source.port() + "/"
                + source.database(), properties);
             PreparedStatement query = c.prepareStatement("""
                     SELECT (SELECT (pg_current_wal_lsn() - restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?),
                            (SELECT extract(epoch FROM now() - min(occurred_at))::float8 FROM %s WHERE occurred_at > ?)"""
                     .formatted(source.table()))) {
            query.setString(1, source.slot());
            query.setTimestamp(2, Timestamp.from(publishedUpTo));
            try (ResultSet rs = query.executeQuery()) {
                rs.next();
                long retained = rs.getLong(1);
                boolean noSlot = rs.wasNull();
                double age = rs.getDouble(2);
                return new Sample(noSlot ? -1 : retained, rs.wasNull() ? 0 : Math.max(0, age),
                        noSlot ? "slot " + source.slot() + " does not exist" : null);
            }
        } catch (SQLException e) {
            return new Sample(-1, -1, "cannot read the lag: " + e.getMessage());
        }
    }

    /** The commit time of the newest event in the stored offset (Debezium's {@code ts_usec}), if there is one. */
    private Optional<Instant> storedCommitTime() throws SQLException, IOException {
        RelayConfig.Offsets offsets = config.offsets();
        Properties properties = new Properties();
        properties.putAll(TIMEOUTS);
        properties.setProperty("user", offsets.user());
        properties.setProperty("password", offsets.password());
        try (Connection c = DriverManager.getConnection(offsets.jdbcUrl(), properties);
             PreparedStatement query = c.prepareStatement("SELECT offset_val FROM " + offsets.table() + " WHERE offset_key LIKE ?")) {
            query.setString(1, "%\"" + DebeziumProperties.TOPIC_PREFIX + "\"%");
            long newest = -1;
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    JsonNode offset = JSON.readTree(rs.getString(1));
                    if (offset.path("ts_usec").canConvertToLong()) {
                        newest = Math.max(newest, offset.path("ts_usec").asLong());
                    }
                }
            }
            return newest < 0 ? Optional.empty() : Optional.of(Instant.EPOCH.plus(newest, ChronoUnit.MICROS));
        } catch (SQLException e) {
            if ("42P01".equals(e.getSQLState())) {
                return Optional.empty(); // no offsets yet: the table is made at the first commit
            }
            throw e; // unreachable or refused: reported as the lag's problem, never read as "nothing published"
        }
    }
}
