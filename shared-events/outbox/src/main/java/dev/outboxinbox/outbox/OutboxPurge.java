package dev.outboxinbox.outbox;

import dev.outboxinbox.retention.BatchedDelete;
import io.quarkus.logging.Log;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
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
    private final OutboxMetrics metrics;

    OutboxPurge(DataSource dataSource, OutboxConfig config, OutboxMetrics metrics) {
        this.dataSource = dataSource;
        this.config = config;
        this.metrics = metrics;
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
        long deleted = BatchedDelete.olderThan(dataSource, "outbox", "id", "occurred_at",
                Instant.now().minus(config.retention()), config.purgeBatchSize());
        metrics.purged(deleted);
        return deleted;
    }
}
