package dev.outboxinbox.order.domain;

import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.outbox.EventIds;
import dev.outboxinbox.outbox.OutboxEmitter;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Places and cancels orders. The order and the event that announces it are written in one
 * transaction: both commit or neither does, so no order exists without its event and no event
 * without its order; likewise a cancellation and its OrderCancelled. This class never talks to the
 * broker; outbox-relay does, from the WAL.
 */
@ApplicationScoped
public class OrderService {

    private final OrderInserts inserts;
    private final OutboxEmitter outbox;
    private final Clock clock;
    private final EntityManager em;
    /** The OrderCreated version written: 2, or 1 while consumers that read only 1 still run. */
    private final int orderCreatedVersion;

    OrderService(OrderInserts inserts, OutboxEmitter outbox, EntityManager em,
                 @ConfigProperty(name = "orders.order-created-version", defaultValue = "2") int orderCreatedVersion) {
        if (orderCreatedVersion != OrderCreated.SCHEMA_VERSION && orderCreatedVersion != OrderCreated.V1.SCHEMA_VERSION) {
            throw new IllegalArgumentException("orders.order-created-version (ORDERS_ORDER_CREATED_VERSION) is " + orderCreatedVersion
                    + ": OrderCreated has versions " + OrderCreated.V1.SCHEMA_VERSION + " and " + OrderCreated.SCHEMA_VERSION);
        }
        this.inserts = inserts;
        this.outbox = outbox;
        this.em = em;
        this.orderCreatedVersion = orderCreatedVersion;
        this.clock = Clock.systemUTC();
    }

    /**
     * Places an order: one statement writes the key's claim, the order and its lines ({@link OrderInserts}),
     * one more its event; then the commit. A key claimed by an earlier request with the same body answers
     * that request's order, and writes nothing.
     *
     * @throws IdempotencyKeyReusedException the key was claimed by a request with another body
     * @throws VersionCannotSayException     pinned to OrderCreated v1, an order with a price or another currency than
     *                                       the default: v1 could not carry it, and nothing is written
     */
    @Transactional
    public PlacedOrder place(PlaceOrder command) {
        UUID orderId = UUID.randomUUID();
        // PostgreSQL keeps microseconds; truncating here makes the event and the row agree.
        Instant now = Instant.now(clock).truncatedTo(ChronoUnit.MICROS);
        Optional<OrderInserts.Claimed> earlier = inserts.insert(orderId, command, now);
        if (earlier.isPresent()) {
            if (!earlier.get().fingerprint().equals(command.fingerprint())) {
                throw new IdempotencyKeyReusedException(command.idempotencyKey().orElseThrow());
            }
            return new PlacedOrder(find(earlier.get().orderId()), true);
        }
        OrderCreated created = new OrderCreated(EventIds.next(), orderId, command.customerId(), command.currency(),
                command.lines().stream().map(line -> new OrderCreated.Line(line.sku, line.quantity, line.unitPrice)).toList(), now);
        if (orderCreatedVersion == OrderCreated.V1.SCHEMA_VERSION && !created.fitsV1()) {
            // The transaction rolls back, the key's claim with the order, so a retry after the switch to v2 places it.
            throw new VersionCannotSayException();
        }
        outbox.send(orderCreatedVersion == OrderCreated.SCHEMA_VERSION ? created : created.asV1(), command.traceparent().orElse(null));
        return new PlacedOrder(new OrderView(orderId, command.customerId(), command.currency(),
                command.lines().stream().map(line -> new OrderView.Line(line.sku, line.quantity, line.unitPrice)).toList(), now,
                OrderStatus.PENDING, null, null, null, null), false);
    }

    /**
     * Cancels an order: PENDING or CONFIRMED → CANCELLING, and OrderCancelled in the outbox, in one
     * transaction. The order's row is locked first ({@code SELECT … FOR UPDATE}), so of two concurrent
     * requests the second waits, then finds CANCELLING and writes nothing: one event per order, however
     * often the client retries. CANCELLING or CANCELLED already: the order as it is, nothing written.
     *
     * @throws OrderNotFoundException      no such order
     * @throws OrderNotCancellableException inventory rejected the order: nothing is held to release
     */
    @Transactional
    public CancelledOrder cancel(UUID id, Optional<String> traceparent) {
        // The row lock, in plain SQL: a second request waits here, then reads the first one's commit below.
        if (em.createNativeQuery("SELECT 1 FROM orders WHERE id = ?1 FOR UPDATE").setParameter(1, id).getResultList().isEmpty()) {
            throw new OrderNotFoundException(id);
        }
        Order order = Order.<Order>findByIdOptional(id).orElseThrow(() -> new OrderNotFoundException(id));
        if (order.status.cancelled()) {
            return new CancelledOrder(OrderView.of(order), false);
        }
        if (!order.status.cancellable()) {
            throw new OrderNotCancellableException(id);
        }
        Instant now = Instant.now(clock).truncatedTo(ChronoUnit.MICROS);
        order.status = OrderStatus.CANCELLING;
        order.cancelRequestedAt = now;
        // Flushed before the event's insert (JDBC, at once): the status change and its event commit together.
        order.persistAndFlush();
        // The order's id as the aggregate id, like OrderCreated: the same partition at inventory, behind the creation.
        outbox.send(new OrderCancelled(EventIds.next(), id, now), traceparent.orElse(null));
        return new CancelledOrder(OrderView.of(order), true);
    }

    /** The newest orders, newest first (the demo page's list). */
    @Transactional
    public List<OrderView> newest(int count) {
        return Order.<Order>find("ORDER BY placedAt DESC").page(0, count).list().stream().map(OrderView::of).toList();
    }

    /**
     * How many orders are in each status, from one statement and so one snapshot. A count per status, each a
     * snapshot of its own, counted an order that changed status between two of them twice, and the demo page,
     * which adds up what the sum gained since it opened, took the next (lower, right) sum for a restart and
     * counted all of it (WholeFlowIT saw 409 orders placed for 1).
     */
    @Transactional
    public Map<OrderStatus, Long> countsByStatus() {
        Map<OrderStatus, Long> counts = new EnumMap<>(OrderStatus.class);
        for (OrderStatus status : OrderStatus.values()) {
            counts.put(status, 0L);
        }
        em.createQuery("SELECT o.status, count(o) FROM Order o GROUP BY o.status", Object[].class).getResultList()
                .forEach(row -> counts.put((OrderStatus) row[0], (Long) row[1]));
        return counts;
    }

    @Transactional
    public OrderView find(UUID id) {
        return Order.<Order>findByIdOptional(id).map(OrderView::of).orElseThrow(() -> new OrderNotFoundException(id));
    }
}
