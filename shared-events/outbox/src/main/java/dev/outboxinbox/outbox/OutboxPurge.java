package dev.outboxinbox.outbox;

import io.quarkus.logging.Log;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * Keeps the outbox from growing without bound: rows older than the retention are deleted in
 * batches. Safe at any time: the publication publishes inserts only, so these deletes never reach
 * the relay, and the relay has the insert from the WAL whether or not the row still exists.
 */
@ApplicationScoped
public class OutboxPurge {

    private final DataSource dataSource;
    private final OutboxConfig config;

    OutboxPurge(DataSource dataSource, OutboxConfig config) {
        this.dataSource = dataSource;
        this.config = config;
    }

    @Scheduled(every = "${outbox.purge-interval:1m}", delayed = "${outbox.purge-interval:1m}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        long deleted = purge();
        if (deleted > 0) {
            Log.infof("Purged %d outbox rows older than %s", deleted, config.retention());
        }
    }

    /** @return how many rows were deleted */
    public long purge() {
        Instant horizon = Instant.now().minus(config.retention());
        long total = 0;
        int deleted;
        do {
            deleted = QuarkusTransaction.requiringNew().call(() -> deleteOldest(horizon));
            total += deleted;
        } while (deleted == config.purgeBatchSize());
        return total;
    }

    private int deleteOldest(Instant horizon) throws SQLException {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement delete = connection.prepareStatement("""
                     DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE occurred_at < ? ORDER BY occurred_at LIMIT ?)""")) {
            delete.setTimestamp(1, Timestamp.from(horizon));
            delete.setInt(2, config.purgeBatchSize());
            return delete.executeUpdate();
        }
    }
}
