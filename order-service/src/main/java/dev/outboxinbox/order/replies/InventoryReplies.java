package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxMetadata;
import dev.outboxinbox.order.domain.OrderStatus;
import io.smallrye.common.annotation.Blocking;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import java.time.Instant;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * Inventory's reply decides the order: CONFIRMED or REJECTED, once. The channel is bound to the inbox
 * library's connector (application.properties); {@link Inbox} calls this only for a reply that is
 * new to order-service, inside the transaction that records it; the status guard
 * ({@code WHERE status = 'PENDING'}) is the effect's own key, so a second reply for one order (another
 * message id) changes nothing either. {@code decided_at} is when order-service learned it (placed_at
 * to decided_at is the round trip through both outboxes, relays and inboxes).
 */
@ApplicationScoped
class InventoryReplies {

    private final EntityManager em;

    InventoryReplies(EntityManager em) {
        this.em = em;
    }

    @Incoming("inventory-replies")
    @Blocking
    @Inbox
    void decide(InventoryEvent reply, InboxMetadata inbox) {
        OrderStatus status = reply instanceof InventoryReserved ? OrderStatus.CONFIRMED : OrderStatus.REJECTED;
        String reason = reply instanceof InventoryRejected rejected ? rejected.reason() : null;
        int decided = em.createNativeQuery("""
                        UPDATE orders SET status = ?1, status_reason = ?2, decided_at = ?3, decided_by = ?4
                        WHERE id = ?5 AND status = 'PENDING'""")
                .setParameter(1, status.name()).setParameter(2, reason).setParameter(3, Instant.now())
                .setParameter(4, inbox.messageId()).setParameter(5, reply.orderId())
                .executeUpdate();
        if (decided == 1) {
            return;
        }
        if (em.createNativeQuery("SELECT 1 FROM orders WHERE id = ?1").setParameter(1, reply.orderId()).getResultList().isEmpty()) {
            // Not ours to guess: parked with this reason for a person (a restore of one database and not the other?).
            throw new IllegalStateException("a reply for order " + reply.orderId() + ", which order-service does not have");
        }
        inbox.changedNothing(); // already decided by an earlier reply
    }
}
