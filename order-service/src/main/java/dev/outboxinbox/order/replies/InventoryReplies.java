package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.inbox.InboxMessage;
import dev.outboxinbox.inbox.MessageHandler;
import dev.outboxinbox.order.domain.OrderStatus;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.time.Instant;

/**
 * Inventory's reply decides the order: CONFIRMED or REJECTED, once. The inbox calls this only for a
 * reply that is new to order-service, inside the transaction that records it; the status guard
 * ({@code WHERE status = 'PENDING'}) is the effect's own key, so a second reply for one order (another
 * message id) changes nothing either. {@code decided_at} is when order-service learned it (placed_at
 * to decided_at is the round trip through both outboxes, relays and inboxes).
 */
@ApplicationScoped
class InventoryReplies implements MessageHandler<InventoryEvent> {

    private final EntityManager em;

    InventoryReplies(EntityManager em) {
        this.em = em;
    }

    @Override
    @Transactional(Transactional.TxType.MANDATORY)
    public String handle(InboxMessage<InventoryEvent> message) {
        InventoryEvent reply = message.payload();
        OrderStatus status = reply instanceof InventoryReserved ? OrderStatus.CONFIRMED : OrderStatus.REJECTED;
        String reason = reply instanceof InventoryRejected rejected ? rejected.reason() : null;
        int decided = em.createNativeQuery("""
                        UPDATE orders SET status = ?1, status_reason = ?2, decided_at = ?3, decided_by = ?4
                        WHERE id = ?5 AND status = 'PENDING'""")
                .setParameter(1, status.name()).setParameter(2, reason).setParameter(3, Instant.now())
                .setParameter(4, message.messageId()).setParameter(5, reply.orderId())
                .executeUpdate();
        if (decided == 1) {
            return status.name();
        }
        if (em.createNativeQuery("SELECT 1 FROM orders WHERE id = ?1").setParameter(1, reply.orderId()).getResultList().isEmpty()) {
            // Not ours to guess: parked with this reason for a person (a restore of one database and not the other?).
            throw new IllegalStateException("a reply for order " + reply.orderId() + ", which order-service does not have");
        }
        return null; // already decided by an earlier reply
    }
}
