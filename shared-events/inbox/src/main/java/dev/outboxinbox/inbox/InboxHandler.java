package dev.outboxinbox.inbox;

import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
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
 * {@code @Inbox} method, one message a transaction, or its {@link BatchEffects}, a batch a
 * transaction). Commit, and only then does the transport ack.
 *
 * <p>Two consumers racing on one message: the second INSERT waits on the first transaction's
 * uncommitted key; if that commits, the second sees the conflict and does nothing; if it rolls
 * back, the second inserts and applies. Never check-then-insert. Two different consumers (another
 * handler sharing this database) each have their own key for the same message.
 */
@ApplicationScoped
public class InboxHandler implements BatchHandler {

    private final DataSource dataSource;
    private final BatchEffects<Object> effects;
    private final String consumer;
    private final boolean deduplicate;
    private final TransactionFences fences;

    @Inject
    InboxHandler(DataSource dataSource, Instance<BatchEffects<?>> batchEffects, InboxConfig config,
            DeduplicationGuard deduplication, TransactionFences fences) {
        this(dataSource, batchEffects(batchEffects), config.consumer(), deduplication.deduplicating(), fences);
    }

    InboxHandler(DataSource dataSource, BatchEffects<?> effects, String consumer, boolean deduplicate) {
        this(dataSource, effects, consumer, deduplicate, new TransactionFences(Duration.ZERO, Duration.ZERO));
    }

    /** @param effects the service's {@link BatchEffects}, or null where an {@code @Inbox} method applies the messages */
    @SuppressWarnings("unchecked")
    InboxHandler(DataSource dataSource, BatchEffects<?> effects, String consumer, boolean deduplicate,
                 TransactionFences fences) {
        if (consumer.isBlank() || consumer.length() > InboxMessage.MAX_KEY_LENGTH) {
            // The inbox column is varchar(64): a longer name would fail every batch, like an outage that never ends.
            throw new IllegalArgumentException("inbox.consumer must be 1 to 64 characters, not '" + consumer + "'");
        }
        this.dataSource = dataSource;
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
