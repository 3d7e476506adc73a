package dev.outboxinbox.order.domain;

import dev.outboxinbox.retention.BatchedDelete;
import io.quarkus.logging.Log;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import javax.sql.DataSource;

/** Forgets {@code Idempotency-Key}s past their retention, so the table does not grow with every request ever made. */
@ApplicationScoped
public class IdempotencyKeyPurge {

    private final DataSource dataSource;
    private final IdempotencyKeyConfig config;

    IdempotencyKeyPurge(DataSource dataSource, IdempotencyKeyConfig config) {
        this.dataSource = dataSource;
        this.config = config;
    }

    @Scheduled(every = "${idempotency-keys.purge-interval:1m}", delayed = "${idempotency-keys.purge-interval:1m}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        long deleted = purge();
        if (deleted > 0) {
            Log.infof("Purged %d Idempotency-Keys older than %s", deleted, config.retention());
        }
    }

    /** @return how many keys were forgotten */
    public long purge() {
        return BatchedDelete.olderThan(dataSource, "idempotency_keys", "idempotency_key", "created_at",
                Instant.now().minus(config.retention()), config.purgeBatchSize());
    }
}
