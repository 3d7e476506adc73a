package dev.outboxinbox.order;

import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.persistence.EntityManager;
import java.time.Instant;

/**
 * Deletes the rows of a table older than a horizon, in short transactions of a bounded size, so
 * that a large backlog is purged without one long transaction holding locks and bloating the WAL.
 */
public final class BatchedDelete {

    private BatchedDelete() {
    }

    /** @return how many rows were deleted; table and columns are this service's own names, never input */
    public static long olderThan(EntityManager em, String table, String key, String timestamp, Instant horizon, int batchSize) {
        String sql = "DELETE FROM %1$s WHERE %2$s IN (SELECT %2$s FROM %1$s WHERE %3$s < ?1 ORDER BY %3$s LIMIT ?2)"
                .formatted(table, key, timestamp);
        long total = 0;
        int deleted;
        do {
            deleted = QuarkusTransaction.requiringNew().call(() -> em.createNativeQuery(sql)
                    .setParameter(1, horizon).setParameter(2, batchSize).executeUpdate());
            total += deleted;
        } while (deleted == batchSize);
        return total;
    }
}
