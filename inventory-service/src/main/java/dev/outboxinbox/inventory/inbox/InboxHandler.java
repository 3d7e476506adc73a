package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.stock.OrderOutcome;
import dev.outboxinbox.inventory.stock.StockReservations;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the idempotency lives. In one transaction, for each message in order: insert its id into
 * the inbox first — the primary key decides, a conflict means "seen before" — and only if the
 * insert took, apply its effect. Commit, and only then does the transport ack.
 *
 * <p>Two consumers racing on one message: the second INSERT waits on the first transaction's
 * uncommitted key; if that commits, the second sees the conflict and does nothing; if it rolls
 * back, the second inserts and applies. Never check-then-insert.
 */
@ApplicationScoped
public class InboxHandler {

    private final EntityManager em;
    private final StockReservations stock;

    InboxHandler(EntityManager em, StockReservations stock) {
        this.em = em;
        this.stock = stock;
    }

    @Transactional
    public List<Outcome> handle(List<ReceivedEvent> batch) {
        List<Outcome> outcomes = new ArrayList<>(batch.size());
        for (ReceivedEvent received : batch) {
            if (!claim(received.messageId())) {
                outcomes.add(new Outcome.Duplicate());
                continue;
            }
            OrderOutcome.Status status = stock.reserve(received.event(), received.messageId());
            outcomes.add(status == null ? new Outcome.Duplicate() : new Outcome.Applied(status));
        }
        return outcomes;
    }

    private boolean claim(String messageId) {
        return em.createNativeQuery("""
                        INSERT INTO inbox (message_id, message_type) VALUES (?1, ?2)
                        ON CONFLICT (message_id) DO NOTHING""")
                .setParameter(1, messageId).setParameter(2, OrderCreated.TYPE)
                .executeUpdate() == 1;
    }
}
