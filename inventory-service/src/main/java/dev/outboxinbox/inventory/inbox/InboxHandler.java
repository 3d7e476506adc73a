package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.InventoryConfig;
import dev.outboxinbox.inventory.stock.OrderOutcome;
import dev.outboxinbox.inventory.stock.StockReservations;
import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
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
public class InboxHandler implements BatchHandler {

    private final EntityManager em;
    private final StockReservations stock;
    private final boolean deduplicate;

    InboxHandler(EntityManager em, StockReservations stock, InventoryConfig config) {
        this.em = em;
        this.stock = stock;
        // Off only in the chaos profile's negative control: DeduplicationGuard refuses it anywhere else.
        this.deduplicate = !config.unsafe().disableDeduplication();
    }

    @Override
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

    /**
     * The writes of a one-order batch, rolled back: whether the database takes this service's writes
     * at all right now. A batch that fails while the probe passes is at fault itself (poison); one
     * that fails like the probe is an outage, and no message's fault.
     */
    @Override
    public void probe() {
        try {
            QuarkusTransaction.requiringNew().run(() -> {
                @SuppressWarnings("unchecked")
                List<String> skus = em.createNativeQuery(
                        "SELECT sku FROM products WHERE on_hand > reserved ORDER BY sku LIMIT 1").getResultList();
                OrderCreated probe = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "inbox-probe",
                        List.of(new OrderCreated.Line(skus.isEmpty() ? "INBOX-PROBE" : skus.get(0), 1)), Instant.now());
                handle(List.of(new ReceivedEvent(probe.eventId().toString(), probe)));
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
