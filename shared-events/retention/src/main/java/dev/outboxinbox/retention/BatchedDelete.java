package dev.outboxinbox.retention;

import io.quarkus.narayana.jta.QuarkusTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * Deletes the rows of a table older than a horizon, in short transactions of a bounded size, so
 * that a large backlog is purged without one long transaction holding locks and bloating the WAL.
 * The purge of the inbox, of the outbox and of order-service's Idempotency-Keys.
 */
public final class BatchedDelete {

    private BatchedDelete() {
    }

    /**
     * @return how many rows were deleted; table and columns are the caller's own names, never input
     */
    public static long olderThan(DataSource dataSource, String table, String key, String timestamp, Instant horizon,
            int batchSize) {
        return olderThan(dataSource, table, key, timestamp, horizon, batchSize, null, null);
    }

    /**
     * The same, for the rows whose {@code scopeColumn} equals {@code scopeValue} only (the inbox: one
     * consumer's rows; another consumer sharing the table purges its own).
     */
    public static long olderThan(DataSource dataSource, String table, String key, String timestamp, Instant horizon,
            int batchSize, String scopeColumn, String scopeValue) {
        String scope = scopeColumn == null ? "" : scopeColumn + " = ? AND ";
        String sql = "DELETE FROM %1$s WHERE %4$s%2$s IN (SELECT %2$s FROM %1$s WHERE %4$s%3$s < ? ORDER BY %3$s LIMIT ?)"
                .formatted(table, key, timestamp, scope);
        long total = 0;
        int deleted;
        do {
            deleted = QuarkusTransaction.requiringNew().call(() -> delete(dataSource, sql, horizon, batchSize, scopeValue));
            total += deleted;
        } while (deleted == batchSize);
        return total;
    }

    private static int delete(DataSource dataSource, String sql, Instant horizon, int batchSize, String scopeValue)
            throws SQLException {
        try (Connection connection = dataSource.getConnection(); PreparedStatement delete = connection.prepareStatement(sql)) {
            int i = 1;
            if (scopeValue != null) {
                delete.setString(i++, scopeValue);
                delete.setString(i++, scopeValue);
            }
            delete.setTimestamp(i++, Timestamp.from(horizon));
            delete.setInt(i, batchSize);
            return delete.executeUpdate();
        }
    }
}
