package dev.outboxinbox.relay;

import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;

/**
 * How far behind the relay is, read from the producer's database, never from the relay's own
 * belief: the WAL its slot retains, and the age of the oldest outbox row committed after the last
 * event the relay published. Sampled at most every two seconds (a scrape and a health check share it).
 */
@ApplicationScoped
class RelayLag {

    private static final long SAMPLE_MILLIS = 2_000;

    /** Retained bytes and the oldest unpublished row's age; -1 where unknown (no slot, database away). */
    record Sample(long retainedWalBytes, double oldestUnpublishedSeconds, String problem) {
    }

    private final RelayConfig config;
    private final RelayStatus status;
    private volatile Sample last = new Sample(-1, -1, "not sampled yet");
    private volatile long sampledAt;

    RelayLag(RelayConfig config, RelayStatus status) {
        this.config = config;
        this.status = status;
    }

    Sample sample() {
        long now = System.currentTimeMillis();
        if (now - sampledAt > SAMPLE_MILLIS) {
            synchronized (this) {
                if (now - sampledAt > SAMPLE_MILLIS) {
                    last = read();
                    sampledAt = System.currentTimeMillis();
                }
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
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + source.host() + ":" + source.port() + "/"
                + source.database(), source.user(), source.password());
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
