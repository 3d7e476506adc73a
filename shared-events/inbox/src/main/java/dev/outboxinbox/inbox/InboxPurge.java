package dev.outboxinbox.inbox;

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
                     DELETE FROM inbox WHERE consumer = ? AND message_id IN (
                         SELECT message_id FROM inbox WHERE consumer = ? AND received_at < ?
                         ORDER BY received_at LIMIT ?)""")) {
            delete.setString(1, config.consumer());
            delete.setString(2, config.consumer());
            delete.setTimestamp(3, Timestamp.from(horizon));
            delete.setInt(4, config.purgeBatchSize());
            return delete.executeUpdate();
        }
    }
}
