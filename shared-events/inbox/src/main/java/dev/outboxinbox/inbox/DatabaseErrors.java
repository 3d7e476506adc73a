package dev.outboxinbox.inbox;

import java.sql.SQLException;

/** What a failed inbox transaction's SQLSTATE says about whose fault it is. */
final class DatabaseErrors {

    /** {@code lock_timeout} fired: a row this batch writes is held by another transaction (SQLSTATE 55P03). */
    static final String LOCK_NOT_AVAILABLE = "55P03";
    /** {@code idle_in_transaction_session_timeout} ended this transaction's session (SQLSTATE 25P03). */
    static final String IDLE_IN_TRANSACTION_TIMEOUT = "25P03";

    private DatabaseErrors() {
    }

    /**
     * Transient: the database could not be reached or said "try again" (SQLSTATE class 08
     * connection, 40 transaction rollback such as deadlock or serialization failure, 53 resources,
     * 57 operator intervention such as a restart), or a fence ended the wait ({@link #blocked}).
     * Worth a retry before asking the probe.
     */
    static boolean isTransient(Throwable e) {
        SQLException sql = firstSqlException(e);
        if (sql == null) {
            return false;
        }
        String state = sql.getSQLState();
        // No state: the pool could not hand out a connection.
        return state == null || state.startsWith("08") || state.startsWith("40")
                || state.startsWith("53") || state.startsWith("57") || blocked(e);
    }

    /**
     * Whether the transaction was ended by one of the inbox's fences: it waited longer than
     * {@code inbox.lock-timeout} on a row another transaction holds (often one whose owner froze or
     * was cut off, until PostgreSQL ends that one too), or its own session sat idle in the
     * transaction past {@code inbox.idle-in-transaction-timeout}. Never the message's fault: retried in
     * place, never probed, never parked.
     */
    static boolean blocked(Throwable e) {
        SQLException sql = firstSqlException(e);
        return sql != null && (LOCK_NOT_AVAILABLE.equals(sql.getSQLState())
                || IDLE_IN_TRANSACTION_TIMEOUT.equals(sql.getSQLState()));
    }

    static SQLException firstSqlException(Throwable e) {
        return firstSqlException(e, 0);
    }

    /**
     * The database's own error, wherever it sits: a failure at commit reaches us as the transaction
     * manager's RollbackException with the SQLException among the suppressed, not the causes.
     */
    private static SQLException firstSqlException(Throwable t, int depth) {
        if (t == null || depth > 20) {
            return null;
        }
        if (t instanceof SQLException sql) {
            return sql;
        }
        for (Throwable suppressed : t.getSuppressed()) {
            SQLException found = firstSqlException(suppressed, depth + 1);
            if (found != null) {
                return found;
            }
        }
        return t.getCause() == t ? null : firstSqlException(t.getCause(), depth + 1);
    }

    /** The database's first line and SQLSTATE, else the root cause's message. */
    static String rootMessage(Throwable e) {
        SQLException sql = firstSqlException(e);
        if (sql != null && sql.getMessage() != null) {
            return sql.getMessage().lines().findFirst().orElse("") + " (SQLSTATE " + sql.getSQLState() + ")";
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() == null ? root.toString() : root.getMessage().lines().findFirst().orElse("");
    }
}
