package dev.outboxinbox.order.replies;

import dev.outboxinbox.order.domain.OrderStatus;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.UUID;

/**
 * An order as inventory's replies see it: its status and the columns a reply sets, nothing else of the
 * row (not its lines: {@link InventoryReplies} loads a batch's orders in one statement, and the order's
 * eagerly fetched lines would cost statements of their own). The orders table is the order's
 * ({@code domain.Order}); the two never meet in one transaction (the replies' and the HTTP requests').
 * Its fields change only through its own methods (Hibernate's enhancement sees every write there).
 */
@Entity
@Table(name = "orders")
class OrderProgress {

    @Id
    UUID id;

    @Enumerated(EnumType.STRING)
    @Column(nullable = false)
    OrderStatus status;

    @Column(name = "status_reason")
    String statusReason;

    @Column(name = "decided_at")
    Instant decidedAt;

    /** The reply (its message id) that decided the order. */
    @Column(name = "decided_by")
    String decidedBy;

    @Column(name = "cancelled_at")
    Instant cancelledAt;

    /** The reply (its message id) that finished the cancellation. */
    @Column(name = "cancelled_by")
    String cancelledBy;

    protected OrderProgress() {
    }

    /**
     * Inventory's decision, once. PENDING: decided. CANCELLING or CANCELLED (the customer was quicker): the
     * decision is recorded, the status stays. Already decided: nothing.
     *
     * @return whether it changed anything
     */
    boolean decide(OrderStatus decision, String reason, String messageId) {
        if (status == OrderStatus.PENDING) {
            status = decision;
        } else if (!status.cancelled() || decidedBy != null) {
            return false;
        }
        statusReason = reason;
        decidedAt = Instant.now();
        decidedBy = messageId;
        return true;
    }

    /**
     * CANCELLING → CANCELLED, once: inventory's release is the last word on a cancelled order.
     *
     * @return whether it changed anything (false: cancelled already)
     * @throws IllegalStateException the order was never cancelled (it is {@link #status})
     */
    boolean released(String messageId) {
        if (status == OrderStatus.CANCELLING) {
            status = OrderStatus.CANCELLED;
            cancelledAt = Instant.now();
            cancelledBy = messageId;
            return true;
        }
        if (status == OrderStatus.CANCELLED) {
            return false;
        }
        throw new IllegalStateException("never cancelled (it is " + status + ")");
    }
}
