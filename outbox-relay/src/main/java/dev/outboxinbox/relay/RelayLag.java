package dev.outboxinbox.relay;

import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How far behind the relay is, read from the producer's database, never from the relay's own
 * belief: the WAL its slot retains, and the age of the oldest outbox row committed after the last
 * event the relay published. Sampled at most every two seconds (a scrape and a health check share it).
 */
@ApplicationScoped
class RelayLag {

    private static final long SAMPLE_MILLIS = 2_000;
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
        Instant publishedUpTo = status.publishedUpTo() != null ? status.publishedUpTo() : Instant.EPOCH;
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
}
