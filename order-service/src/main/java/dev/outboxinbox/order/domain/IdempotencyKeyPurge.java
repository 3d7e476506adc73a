package dev.outboxinbox.order.domain;

import dev.outboxinbox.order.BatchedDelete;
import io.quarkus.logging.Log;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import java.time.Instant;

/** Forgets {@code Idempotency-Key}s past their retention, so the table does not grow with every request ever made. */
@ApplicationScoped
public class IdempotencyKeyPurge {

    private final EntityManager em;
    private final IdempotencyKeyConfig config;

    IdempotencyKeyPurge(EntityManager em, IdempotencyKeyConfig config) {
        this.em = em;
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
        return BatchedDelete.olderThan(em, "idempotency_keys", "idempotency_key", "created_at",
                Instant.now().minus(config.retention()), config.purgeBatchSize());
    }
}
