package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.transaction.HeuristicMixedException;
import jakarta.transaction.HeuristicRollbackException;
import jakarta.transaction.InvalidTransactionException;
import jakarta.transaction.NotSupportedException;
import jakarta.transaction.RollbackException;
import jakarta.transaction.SystemException;
import jakarta.transaction.Transaction;
import jakarta.transaction.TransactionManager;
import jakarta.transaction.Transactional;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Where the idempotency lives. In one transaction: insert the batch's message ids into the inbox
 * first — the primary key {@code (consumer, message_id)} decides, and only the ids the insert really
 * added are new — then apply the effect of the new ones, and only theirs (the business: its
 * {@code @Inbox} method, called for each new message in turn inside the channel's transaction
 * ({@link #begin}, {@link ChannelSink}), or its {@link BatchEffects}, once for the batch ({@link #handle})).
 * Commit, and only then does the transport ack.
 *
 * <p>Two consumers racing on one message: the second INSERT waits on the first transaction's
 * uncommitted key; if that commits, the second sees the conflict and does nothing; if it rolls
 * back, the second inserts and applies. Never check-then-insert. Two different consumers (another
 * handler sharing this database) each have their own key for the same message.
 */
@ApplicationScoped
public class InboxHandler implements BatchHandler, ChannelTransaction.Opener {

    private final DataSource dataSource;
    private final TransactionManager transactions;
    private final BatchEffects<Object> effects;
    private final String consumer;
    private final boolean deduplicate;
    private final TransactionFences fences;
    /** The service's Hibernate sessions, opened on the thread that ends a channel's transaction. */
    private final HibernateSessions hibernate = new HibernateSessions();

    @Inject
    InboxHandler(DataSource dataSource, TransactionManager transactions, Instance<BatchEffects<?>> batchEffects,
            InboxConfig config, DeduplicationGuard deduplication, TransactionFences fences) {
        this(dataSource, transactions, batchEffects(batchEffects), config.consumer(), deduplication.deduplicating(), fences);
    }

    InboxHandler(DataSource dataSource, BatchEffects<?> effects, String consumer, boolean deduplicate) {
        this(dataSource, null, effects, consumer, deduplicate, new TransactionFences(Duration.ZERO, Duration.ZERO));
    }

    /** @param effects the service's {@link BatchEffects}, or null where an {@code @Inbox} method applies the messages */
    @SuppressWarnings("unchecked")
    InboxHandler(DataSource dataSource, TransactionManager transactions, BatchEffects<?> effects, String consumer,
                 boolean deduplicate, TransactionFences fences) {
        if (consumer.isBlank() || consumer.length() > InboxMessage.MAX_KEY_LENGTH) {
            // The inbox column is varchar(64): a longer name would fail every batch, like an outage that never ends.
            throw new IllegalArgumentException("inbox.consumer must be 1 to 64 characters, not '" + consumer + "'");
        }
        this.dataSource = dataSource;
        this.transactions = transactions;
        // The transport hands over exactly the payload type the decoder made for this consumer.
        this.effects = (BatchEffects<Object>) effects;
        this.consumer = consumer;
        // Off only in the chaos profile's negative control: DeduplicationGuard refuses it anywhere else.
        this.deduplicate = deduplicate;
        this.fences = fences;
    }

    private static BatchEffects<?> batchEffects(Instance<BatchEffects<?>> batchEffects) {
        if (batchEffects.isAmbiguous()) {
            throw new IllegalStateException("the inbox takes one BatchEffects bean; found " + batchEffects.stream().count());
        }
        return batchEffects.isResolvable() ? batchEffects.get() : null;
    }

    /** Whether the service applies messages a batch at a time ({@link BatchEffects}) rather than with an {@code @Inbox} method. */
    public boolean appliesBatches() {
        return effects != null;
    }

    /** Whether a copy is skipped (always, but in the chaos profile's negative control: {@link DeduplicationGuard}). */
    boolean deduplicates() {
        return deduplicate;
    }

    /** The name a {@link BatchEffects} service's messages are kept under in the inbox ({@code inbox.consumer}). */
    public String consumer() {
        return consumer;
    }

    @Override
    @Transactional
    public List<Outcome> handle(List<InboxMessage<?>> batch) {
        if (effects == null) {
            throw new IllegalStateException("no BatchEffects bean: this service's messages go through its @Inbox method");
        }
        Set<String> newToInbox = claim(batch);
        Set<String> claimed = new HashSet<>(newToInbox);
        List<InboxMessage<Object>> fresh = new ArrayList<>();
        for (InboxMessage<?> received : batch) {
            // remove(): a message twice in one batch is new once, and a duplicate the second time.
            if (claimed.remove(received.messageId()) || !deduplicate) {
                fresh.add(cast(received));
            }
        }
        Map<String, String> applied = fresh.isEmpty() ? Map.of() : effects.apply(fresh);
        Set<String> counted = new HashSet<>();
        List<Outcome> outcomes = new ArrayList<>(batch.size());
        for (InboxMessage<?> received : batch) {
            if (!counted.add(received.messageId())) {
                outcomes.add(new Outcome.Duplicate()); // the same message twice in one batch: the second is a copy
                continue;
            }
            String result = applied.get(received.messageId());
            // Not applied: a copy (its key was there), or new to the inbox with its effect already had (another message id).
            outcomes.add(result != null ? new Outcome.Applied(result)
                    : newToInbox.contains(received.messageId()) ? new Outcome.Unchanged() : new Outcome.Duplicate());
        }
        return outcomes;
    }

    /**
     * The writes of a one-message batch (the business's made-up message, or just an inbox row),
     * rolled back: whether the database takes this service's writes at all right now. A batch that
     * fails while the probe passes is at fault itself (poison); one that fails like the probe is an
     * outage, and no message's fault.
     */
    @Override
    public void probe() {
        try {
            QuarkusTransaction.requiringNew().run(() -> {
                InboxMessage<Object> probe = effects == null ? null : effects.probe();
                if (probe != null) {
                    handle(List.of(probe));
                } else {
                    claim(List.of(new InboxMessage<>("inbox-probe-" + UUID.randomUUID(), "inbox-probe", null)));
                }
                throw new ProbeSucceeded(); // rolls the probe's writes back
            });
        } catch (RuntimeException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof ProbeSucceeded) {
                    return;
                }
            }
            throw e;
        }
        throw new IllegalStateException("the probe transaction committed");
    }

    /** Thrown at the end of a probe that wrote everything, so that its transaction is rolled back. */
    private static final class ProbeSucceeded extends RuntimeException {
        ProbeSucceeded() {
            super("probe succeeded; rolled back on purpose", null, false, false);
        }
    }

    /**
     * Claims one message for {@code consumer} (its channel's name) in the caller's transaction (the
     * {@link Inbox} interceptor's).
     *
     * @return whether the message is new to this consumer
     */
    boolean claim(String consumer, String messageId, String type) {
        return !claim(consumer, List.of(new InboxMessage<>(messageId, type, null))).isEmpty();
    }

    /**
     * The transaction's fences first ({@link TransactionFences}: it is the first statement of every inbox
     * transaction), then one INSERT for the whole batch; RETURNING names the ids that were not there before. The
     * connection is the transaction's: Agroal hands every caller inside one JTA transaction the same
     * one, so this insert and the business's writes (JDBC or Hibernate) commit or roll back together.
     */
    private Set<String> claim(List<InboxMessage<?>> batch) {
        return claim(consumer, batch);
    }

    private Set<String> claim(String consumer, List<InboxMessage<?>> batch) {
        try (Connection connection = dataSource.getConnection()) {
            fences.apply(connection);
            return claim(connection, consumer, batch);
        } catch (SQLException e) {
            throw new InboxWriteException(e);
        }
    }

    private static Set<String> claim(Connection connection, String consumer, List<InboxMessage<?>> batch) throws SQLException {
        Set<String> inserted = new HashSet<>();
        try (PreparedStatement insert = connection.prepareStatement("""
                     INSERT INTO inbox (consumer, message_id, message_type)
                     SELECT ?, id, type FROM unnest(?::text[], ?::text[]) AS m(id, type)
                     ON CONFLICT (consumer, message_id) DO NOTHING
                     RETURNING message_id""")) {
            insert.setString(1, consumer);
            insert.setArray(2, connection.createArrayOf("text", batch.stream().map(InboxMessage::messageId).toArray()));
            insert.setArray(3, connection.createArrayOf("text", batch.stream().map(InboxMessage::type).toArray()));
            try (ResultSet rs = insert.executeQuery()) {
                while (rs.next()) {
                    inserted.add(rs.getString(1));
                }
            }
        }
        return inserted;
    }

    /**
     * A channel's transaction for {@code batch}: begun on this thread, its fences set, every message id
     * claimed under {@code consumer} in one INSERT, then detached from this thread for the
     * {@code @Inbox} method to join, one message at a time ({@link ChannelSink}).
     */
    @Override
    public ChannelTransaction begin(String consumer, List<InboxMessage<?>> batch) {
        try {
            transactions.begin();
        } catch (NotSupportedException | SystemException e) {
            throw new IllegalStateException("cannot begin the inbox's transaction: " + e.getMessage(), e);
        }
        try {
            hibernate.openOnThisThread();
            Set<String> fresh = claim(consumer, batch);
            return new JtaChannelTransaction(transactions, transactions.suspend(), fresh);
        } catch (RuntimeException | SystemException e) {
            try {
                transactions.rollback();
            } catch (IllegalStateException | SecurityException | SystemException alreadyOver) {
                e.addSuppressed(alreadyOver);
            }
            throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
        }
    }

    /**
     * The channel's probe goes the channel's way ({@link #begin}: the transaction manager, the fences,
     * the service's Hibernate session, the claim), so that a fault of that way reads as an outage
     * rather than as every message's fault.
     */
    @Override
    public void probe(String consumer) {
        begin(consumer, List.of(new InboxMessage<>("inbox-probe-" + UUID.randomUUID(), "inbox-probe", null))).rollback();
    }

    /** A JTA transaction handed between the sink's thread and the method's: one thread at a time. */
    private static final class JtaChannelTransaction implements ChannelTransaction {

        private final TransactionManager transactions;
        private final Transaction transaction;
        private final Set<String> fresh;
        private volatile boolean abandoned;

        JtaChannelTransaction(TransactionManager transactions, Transaction transaction, Set<String> fresh) {
            this.transactions = transactions;
            this.transaction = transaction;
            this.fresh = fresh;
        }

        @Override
        public boolean claimed(String messageId) {
            return fresh.remove(messageId);
        }

        @Override
        public void abandon() {
            abandoned = true;
        }

        @Override
        public boolean join() {
            if (abandoned) {
                return false;
            }
            resume();
            return true;
        }

        private void resume() {
            try {
                transactions.resume(transaction);
            } catch (InvalidTransactionException | SystemException e) {
                // Ended under the method's feet (the transaction timeout's reaper rolled it back): the batch fails.
                throw new IllegalStateException("the inbox's transaction cannot be joined: " + e.getMessage(), e);
            }
        }

        @Override
        public void leave() {
            try {
                transactions.suspend();
            } catch (SystemException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void commit() {
            if (abandoned) {
                throw new IllegalStateException("an abandoned batch does not commit");
            }
            // On this thread: Hibernate flushes its session before the commit, and Agroal finds the
            // transaction's connection by the thread's transaction.
            resume();
            try {
                transactions.commit();
            } catch (RollbackException | HeuristicMixedException | HeuristicRollbackException | SystemException e) {
                throw new IllegalStateException("the inbox's transaction did not commit: " + e.getMessage(), e);
            } finally {
                if (associated()) {
                    leave();
                }
            }
        }

        @Override
        public void rollback() {
            // On this thread too: Agroal rolls the connection back only for the thread's own transaction
            // (from a thread without it, the rollback fails and the connection keeps its open transaction).
            try {
                transactions.resume(transaction);
                transactions.rollback();
            } catch (InvalidTransactionException | IllegalStateException | SecurityException | SystemException alreadyOver) {
                // Rolled back already (by the reaper, or with its connection): nothing of it commits either way.
                Log.debugf("the inbox's transaction was over before its rollback: %s", alreadyOver);
            } finally {
                if (associated()) {
                    leave();
                }
            }
        }

        private boolean associated() {
            try {
                return transactions.getTransaction() != null;
            } catch (SystemException e) {
                return false;
            }
        }
    }

    /** The database refused the inbox insert; the batcher reads the SQLSTATE of the cause. */
    static final class InboxWriteException extends RuntimeException {
        InboxWriteException(SQLException cause) {
            super("inbox insert failed: " + cause.getMessage(), cause);
        }
    }

    @SuppressWarnings("unchecked")
    private static InboxMessage<Object> cast(InboxMessage<?> message) {
        return (InboxMessage<Object>) message;
    }
}
