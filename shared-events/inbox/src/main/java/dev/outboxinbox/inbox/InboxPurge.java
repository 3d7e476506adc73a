package dev.outboxinbox.inbox;

import dev.outboxinbox.retention.BatchedDelete;
import io.quarkus.logging.Log;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import javax.sql.DataSource;

/** Forgets message ids older than the retention horizon, in short batched transactions. */
@ApplicationScoped
public class InboxPurge {

    private final DataSource dataSource;
    private final InboxConfig config;

    InboxPurge(DataSource dataSource, InboxConfig config) {
        this.dataSource = dataSource;
        this.config = config;
    }

    @Scheduled(every = "${inbox.purge-interval:1h}", delayed = "1m",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        long deleted = purge();
        if (deleted > 0) {
            Log.infof("Purged %d inbox entries older than %s", deleted, config.retention());
        }
    }

    /** Forgets this consumer's message ids older than the horizon; another consumer's rows are its own to purge. */
    public long purge() {
        return BatchedDelete.olderThan(dataSource, "inbox", "message_id", "received_at",
                Instant.now().minus(config.retention()), config.purgeBatchSize(), "consumer", config.consumer());
    }
}
