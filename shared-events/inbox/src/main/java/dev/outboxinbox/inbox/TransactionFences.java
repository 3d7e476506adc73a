package dev.outboxinbox.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;

/**
 * The fences of every inbox transaction, set at its start for that transaction alone
 * ({@code set_config(..., true)}, as {@code SET LOCAL}): {@code lock_timeout} ({@code inbox.lock-timeout})
 * and {@code idle_in_transaction_session_timeout} ({@code inbox.idle-in-transaction-timeout}).
 *
 * <p>Why: an instance frozen or cut off inside its transaction (its inbox rows inserted, product rows
 * locked) holds those rows until PostgreSQL ends its session. The partition lock's lease only covers
 * the lock session, so without these the instance taking the partitions over would wait on those rows
 * for hours (until TCP gives up). With them, the frozen transaction is ended once it sits idle for the
 * idle-in-transaction timeout, or its own wait ends at the lock timeout (an aborted transaction holds
 * no locks); the new owner's blocked batch fails at its lock timeout and is retried in place
 * ({@link DatabaseErrors#blocked}).
 */
@ApplicationScoped
public class TransactionFences {

    private final String lockTimeout;
    private final String idleInTransactionTimeout;

    @Inject
    TransactionFences(InboxConfig config) {
        this(config.lockTimeout(), config.idleInTransactionTimeout());
    }

    TransactionFences(Duration lockTimeout, Duration idleInTransactionTimeout) {
        this.lockTimeout = milliseconds("inbox.lock-timeout", lockTimeout);
        this.idleInTransactionTimeout = milliseconds("inbox.idle-in-transaction-timeout", idleInTransactionTimeout);
    }

    /** Sets both fences for the transaction {@code connection} is in (one round trip). */
    void apply(Connection connection) throws SQLException {
        try (PreparedStatement set = connection.prepareStatement(
                "SELECT set_config('lock_timeout', ?, true), set_config('idle_in_transaction_session_timeout', ?, true)")) {
            set.setString(1, lockTimeout);
            set.setString(2, idleInTransactionTimeout);
            set.executeQuery().close();
        }
    }

    private static String milliseconds(String setting, Duration value) {
        if (value.isNegative() || value.toMillis() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(setting + " must be 0 (off) to " + Integer.MAX_VALUE + " ms, not " + value);
        }
        return value.toMillis() + "ms";
    }
}
