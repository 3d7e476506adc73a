package dev.outboxinbox.order.domain;

import io.quarkus.hibernate.orm.panache.PanacheEntityBase;
import jakarta.persistence.CollectionTable;
import jakarta.persistence.Column;
import jakarta.persistence.ElementCollection;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.FetchType;
import jakarta.persistence.Id;
import jakarta.persistence.JoinColumn;
import jakarta.persistence.OrderColumn;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

@Entity
@Table(name = "orders")
public class Order extends PanacheEntityBase {

    @Id
    public UUID id;

    @Column(name = "customer_id", nullable = false)
    public String customerId;

    /** ISO 4217, of the lines' unit prices. */
    @Column(nullable = false, length = 3)
    public String currency;

    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "order_lines", joinColumns = @JoinColumn(name = "order_id"))
    @OrderColumn(name = "line_no")
    public List<OrderLine> lines = new ArrayList<>();

    @Column(name = "placed_at", nullable = false)
    public Instant placedAt;

    /**
     * PENDING until inventory's reply; then CONFIRMED or REJECTED, once ({@code InventoryReplies}).
     * CANCELLING from a cancel request ({@link OrderService#cancel}), CANCELLED at inventory's release.
     */
    @Enumerated(EnumType.STRING)
    @Column(nullable = false)
    public OrderStatus status = OrderStatus.PENDING;

    @Column(name = "status_reason")
    public String statusReason;

    @Column(name = "decided_at")
    public Instant decidedAt;

    @Column(name = "cancel_requested_at")
    public Instant cancelRequestedAt;

    @Column(name = "cancelled_at")
    public Instant cancelledAt;

    protected Order() {
    }
}
