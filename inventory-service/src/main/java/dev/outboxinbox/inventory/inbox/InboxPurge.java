package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.inventory.InventoryConfig;
import io.quarkus.logging.Log;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import java.time.Instant;

/** Forgets message ids older than the retention horizon, in short batched transactions. */
@ApplicationScoped
public class InboxPurge {

    private final EntityManager em;
    private final InventoryConfig.Inbox config;

    InboxPurge(EntityManager em, InventoryConfig config) {
        this.em = em;
        this.config = config.inbox();
    }

    @Scheduled(every = "${inventory.inbox.purge-interval:1h}", delayed = "1m",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        long deleted = purge();
        if (deleted > 0) {
            Log.infof("Purged %d inbox entries older than %s", deleted, config.retention());
        }
    }

    public long purge() {
        Instant horizon = Instant.now().minus(config.retention());
        long total = 0;
        int deleted;
        do {
            deleted = QuarkusTransaction.requiringNew().call(() -> em.createNativeQuery("""
                            DELETE FROM inbox WHERE message_id IN (
                                SELECT message_id FROM inbox WHERE received_at < ?1 ORDER BY received_at LIMIT ?2)""")
                    .setParameter(1, horizon).setParameter(2, config.purgeBatchSize())
                    .executeUpdate());
            total += deleted;
        } while (deleted == config.purgeBatchSize());
        return total;
    }
}
