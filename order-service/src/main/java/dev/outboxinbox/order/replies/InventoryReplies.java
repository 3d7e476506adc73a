package dev.outboxinbox.order.replies;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxLookahead;
import dev.outboxinbox.inbox.InboxMetadata;
import dev.outboxinbox.inbox.RejectedMessageException;
import dev.outboxinbox.order.domain.OrderStatus;
import io.smallrye.common.annotation.NonBlocking;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.persistence.LockModeType;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * Inventory's replies move the order, each once: InventoryReserved / InventoryRejected decide it
 * (PENDING → CONFIRMED or REJECTED), InventoryReleased finishes its cancellation (CANCELLING →
 * CANCELLED). The channel is bound to the inbox library's connector (application.properties);
 * {@link Inbox} calls this only for a reply that is new to order-service, inside the transaction that
 * records it; the status each change starts from is the effect's own key, so a second reply for one
 * order (another message id) changes nothing either.
 *
 * <p>The replies that arrived together share a transaction, and the channel lets this class look at
 * them first ({@link InboxLookahead}): their orders are read and locked in one statement, each call
 * finds its order in the persistence context and changes it there, and Hibernate writes the changes at
 * the commit in JDBC batches. A batch costs a handful of round trips instead of one a reply, one after
 * the other, which under load was what kept the reply hop behind (issue 29). {@code decided_at} is when order-service learned it
 * (placed_at to decided_at is the round trip through both outboxes, relays and inboxes).
 *
 * <p>A cancel request can overtake inventory's decision (the customer cancels a PENDING order): the
 * decision still arrives, and is recorded ({@code decided_at}, {@code decided_by}, {@code status_reason})
 * without moving the status; the release, which inventory always sends after it, finishes the order.
 */
@ApplicationScoped
public class InventoryReplies implements InboxLookahead<InventoryEvent> {

    /** The inbox channel of the replies: its settings are mp.messaging.incoming.inventory-replies.* */
    public static final String CHANNEL = "inventory-replies";

    private final EntityManager em;

    InventoryReplies(EntityManager em) {
        this.em = em;
    }

    /**
     * The batch's orders in one statement, locked as each call locks its own (in the order of their ids,
     * as every batch takes them), into the transaction's persistence context.
     * <p>A prepared statement: its plan is as good as the table's statistics. On a database that is never
     * analysed (autovacuum off), the server kept the sequential scan it had chosen while {@code orders} was
     * small, 140-220 ms a batch at 75,000 orders (deploy/benchmarks/README, "The half-rate tail").
     */
    @Override
    public void lookahead(List<InventoryEvent> replies) {
        List<UUID> orders = replies.stream().map(InventoryEvent::orderId).distinct().sorted().toList();
        em.createQuery("FROM OrderProgress WHERE id IN :ids ORDER BY id", OrderProgress.class)
                .setParameter("ids", orders)
                .setLockMode(LockModeType.PESSIMISTIC_WRITE)
                .getResultList();
    }

    @Incoming(CHANNEL)
    @NonBlocking
    @Inbox
    void apply(InventoryEvent reply, InboxMetadata inbox) throws RejectedMessageException {
        // Found in the persistence context when the batch was looked at (no query); read and locked here otherwise.
        OrderProgress order = em.find(OrderProgress.class, reply.orderId(), LockModeType.PESSIMISTIC_WRITE);
        if (order == null) {
            // Not ours to guess: parked with this reason for a person (a restore of one database and not the other?).
            throw new IllegalStateException("a reply for order " + reply.orderId() + ", which order-service does not have");
        }
        // Java 17 has no pattern switch over the sealed InventoryEvent: the type names are its cases.
        boolean changed = switch (reply.eventType()) {
            case InventoryReserved.TYPE -> order.decide(OrderStatus.CONFIRMED, null, inbox.messageId());
            case InventoryRejected.TYPE -> order.decide(OrderStatus.REJECTED, ((InventoryRejected) reply).reason(), inbox.messageId());
            case InventoryReleased.TYPE -> cancelled(order, inbox.messageId());
            // The decoder lets only the contract's replies through; one added to it and not here is parked, not guessed at.
            default -> throw new RejectedMessageException("order-service does not handle the reply type '" + reply.eventType() + "'");
        };
        if (!changed) {
            inbox.changedNothing(); // already decided (or already cancelled) by an earlier reply
        }
    }

    /** CANCELLING → CANCELLED, once; a release for an order never cancelled is a bug to look at (parked with the reason). */
    private static boolean cancelled(OrderProgress order, String messageId) throws RejectedMessageException {
        try {
            return order.released(messageId);
        } catch (IllegalStateException neverCancelled) {
            throw new RejectedMessageException("a release for order " + order.id + ", which was " + neverCancelled.getMessage());
        }
    }
}
