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
    private final ConsumerNames consumers;

    InboxPurge(DataSource dataSource, InboxConfig config, ConsumerNames consumers) {
        this.dataSource = dataSource;
        this.config = config;
        this.consumers = consumers;
    }

    @Scheduled(every = "${inbox.purge-interval:1h}", delayed = "1m",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        long deleted = purge();
        if (deleted > 0) {
            Log.infof("Purged %d inbox entries older than %s", deleted, config.retention());
        }
    }

    /**
     * Forgets the message ids older than the horizon of each stream this service reads (its channels);
     * another service's rows are its own to purge.
     */
    public long purge() {
        Instant horizon = Instant.now().minus(config.retention());
        long deleted = 0;
        for (String consumer : consumers.all()) {
            deleted += BatchedDelete.olderThan(dataSource, "inbox", "message_id", "received_at", horizon,
                    config.purgeBatchSize(), "consumer", consumer);
        }
        return deleted;
    }
}
