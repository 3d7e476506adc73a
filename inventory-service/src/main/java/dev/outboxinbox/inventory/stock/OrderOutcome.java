package dev.outboxinbox.inventory.stock;

import io.quarkus.hibernate.orm.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.UUID;

/** What inventory decided for an order: one row per order, its own unique key on the business effect. */
@Entity
@Table(name = "order_outcomes")
public class OrderOutcome extends PanacheEntityBase {

    /** CANCELLED_FIRST: a tombstone, the cancellation arrived before the order (a reordering); it reserves nothing. */
    public enum Status { RESERVED, REJECTED, CANCELLED_FIRST }

    @Id
    @Column(name = "order_id")
    public UUID orderId;

    @Enumerated(EnumType.STRING)
    @Column(nullable = false)
    public Status status;

    @Column
    public String reason;

    @Column(name = "message_id", nullable = false)
    public String messageId;

    @Column(name = "decided_at", nullable = false)
    public Instant decidedAt;
}
