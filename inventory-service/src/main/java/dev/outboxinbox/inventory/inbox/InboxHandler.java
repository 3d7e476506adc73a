package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.InventoryConfig;
import dev.outboxinbox.inventory.stock.OrderOutcome;
import dev.outboxinbox.inventory.stock.StockReservations;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.hibernate.Session;

/**
 * Where the idempotency lives. In one transaction: insert the batch's message ids into the inbox
 * first — the primary key decides, and only the ids the insert really added are new — then apply
 * the effect of the new ones, and only theirs. Commit, and only then does the transport ack.
 *
 * <p>Two consumers racing on one message: the second INSERT waits on the first transaction's
 * uncommitted key; if that commits, the second sees the conflict and does nothing; if it rolls
 * back, the second inserts and applies. Never check-then-insert.
 */
@ApplicationScoped
public class InboxHandler {

    private final EntityManager em;
    private final StockReservations stock;
    private final boolean deduplicate;

    InboxHandler(EntityManager em, StockReservations stock, InventoryConfig config) {
        this.em = em;
        this.stock = stock;
        this.deduplicate = !config.unsafe().disableDeduplication();
        if (!deduplicate) {
            Log.warn("UNSAFE: deduplication is disabled (inventory.unsafe.disable-deduplication): every delivery"
                    + " takes effect, duplicates included. This is the fault-injection negative control, never a deployment.");
        }
    }

    @Transactional
    public List<Outcome> handle(List<ReceivedEvent> batch) {
        Set<String> claimed = claim(batch);
        List<ReceivedEvent> fresh = new ArrayList<>();
        for (ReceivedEvent received : batch) {
            // remove(): a message twice in one batch is new once, and a duplicate the second time.
            if (claimed.remove(received.messageId()) || !deduplicate) {
                fresh.add(received);
            }
        }
        Map<String, OrderOutcome.Status> applied = stock.reserve(fresh);
        Set<String> counted = new HashSet<>();
        List<Outcome> outcomes = new ArrayList<>(batch.size());
        for (ReceivedEvent received : batch) {
            OrderOutcome.Status status = applied.get(received.messageId());
            outcomes.add(status != null && counted.add(received.messageId())
                    ? new Outcome.Applied(status)
                    : new Outcome.Duplicate());
        }
        return outcomes;
    }

    /** One INSERT for the whole batch; RETURNING names the ids that were not there before. */
    private Set<String> claim(List<ReceivedEvent> batch) {
        return em.unwrap(Session.class).doReturningWork(connection -> {
            Set<String> inserted = new HashSet<>();
            try (PreparedStatement insert = connection.prepareStatement("""
                    INSERT INTO inbox (message_id, message_type)
                    SELECT id, ? FROM unnest(?::text[]) AS m(id)
                    ON CONFLICT (message_id) DO NOTHING
                    RETURNING message_id""")) {
                insert.setString(1, OrderCreated.TYPE);
                insert.setArray(2, connection.createArrayOf("text", batch.stream().map(ReceivedEvent::messageId).toArray()));
                try (ResultSet rs = insert.executeQuery()) {
                    while (rs.next()) {
                        inserted.add(rs.getString(1));
                    }
                }
            }
            return inserted;
        });
    }
}
