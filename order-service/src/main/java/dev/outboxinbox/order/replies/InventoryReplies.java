package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxMetadata;
import dev.outboxinbox.inbox.RejectedMessageException;
import dev.outboxinbox.order.domain.OrderStatus;
import io.smallrye.common.annotation.NonBlocking;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * Inventory's replies move the order, each once: InventoryReserved / InventoryRejected decide it
 * (PENDING → CONFIRMED or REJECTED), InventoryReleased finishes its cancellation (CANCELLING →
 * CANCELLED). The channel is bound to the inbox library's connector (application.properties);
 * {@link Inbox} calls this only for a reply that is new to order-service, inside the transaction that
 * records it; the status guard in each UPDATE is the effect's own key, so a second reply for one order
 * (another message id) changes nothing either. {@code decided_at} is when order-service learned it
 * (placed_at to decided_at is the round trip through both outboxes, relays and inboxes).
 *
 * <p>A cancel request can overtake inventory's decision (the customer cancels a PENDING order): the
 * decision still arrives, and is recorded ({@code decided_at}, {@code decided_by}, {@code status_reason})
 * without moving the status; the release, which inventory always sends after it, finishes the order.
 */
@ApplicationScoped
public class InventoryReplies {

    /** The inbox channel of the replies: its settings are mp.messaging.incoming.inventory-replies.* */
    public static final String CHANNEL = "inventory-replies";

    private final EntityManager em;

    InventoryReplies(EntityManager em) {
        this.em = em;
    }

    @Incoming(CHANNEL)
    @NonBlocking
    @Inbox
    void apply(InventoryEvent reply, InboxMetadata inbox) throws RejectedMessageException {
        // Java 17 has no pattern switch over the sealed InventoryEvent: the type names are its cases.
        int changed = switch (reply.eventType()) {
            case InventoryReserved.TYPE -> decide(reply.orderId(), OrderStatus.CONFIRMED, null, inbox.messageId());
            case InventoryRejected.TYPE -> decide(reply.orderId(), OrderStatus.REJECTED, ((InventoryRejected) reply).reason(),
                    inbox.messageId());
            case InventoryReleased.TYPE -> cancelled(reply.orderId(), inbox.messageId());
            // The decoder lets only the contract's replies through; one added to it and not here is parked, not guessed at.
            default -> throw new RejectedMessageException("order-service does not handle the reply type '" + reply.eventType() + "'");
        };
        if (changed == 1) {
            return;
        }
        String status = statusOf(reply.orderId());
        if (status == null) {
            // Not ours to guess: parked with this reason for a person (a restore of one database and not the other?).
            throw new IllegalStateException("a reply for order " + reply.orderId() + ", which order-service does not have");
        }
        if (reply instanceof InventoryReleased && !OrderStatus.CANCELLED.name().equals(status)) {
            // Inventory releases only what a cancellation asked for: a release for an order never cancelled is a bug to look at.
            throw new RejectedMessageException("a release for order " + reply.orderId() + ", which was never cancelled (it is " + status + ")");
        }
        inbox.changedNothing(); // already decided (or already cancelled) by an earlier reply
    }

    /**
     * PENDING: decided. CANCELLING or CANCELLED (the customer was quicker): the decision is recorded, the
     * status stays. Already decided: nothing.
     */
    private int decide(UUID orderId, OrderStatus status, String reason, String messageId) {
        return em.createNativeQuery("""
                        UPDATE orders SET status = CASE WHEN status = 'PENDING' THEN ?1 ELSE status END,
                            status_reason = ?2, decided_at = ?3, decided_by = ?4
                        WHERE id = ?5
                          AND (status = 'PENDING' OR (status IN ('CANCELLING', 'CANCELLED') AND decided_by IS NULL))""")
                .setParameter(1, status.name()).setParameter(2, reason).setParameter(3, Instant.now())
                .setParameter(4, messageId).setParameter(5, orderId)
                .executeUpdate();
    }

    /** CANCELLING → CANCELLED, once: the release is the last word on a cancelled order. */
    private int cancelled(UUID orderId, String messageId) {
        return em.createNativeQuery("""
                        UPDATE orders SET status = 'CANCELLED', cancelled_at = ?1, cancelled_by = ?2
                        WHERE id = ?3 AND status = 'CANCELLING'""")
                .setParameter(1, Instant.now()).setParameter(2, messageId).setParameter(3, orderId)
                .executeUpdate();
    }

    private String statusOf(UUID orderId) {
        List<?> status = em.createNativeQuery("SELECT status FROM orders WHERE id = ?1").setParameter(1, orderId).getResultList();
        return status.isEmpty() ? null : String.valueOf(status.get(0));
    }
}
