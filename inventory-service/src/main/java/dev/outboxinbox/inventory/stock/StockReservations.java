package dev.outboxinbox.inventory.stock;

import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.BatchEffects;
import dev.outboxinbox.inbox.DeduplicationGuard;
import dev.outboxinbox.inbox.InboxMessage;
import dev.outboxinbox.outbox.EventIds;
import dev.outboxinbox.outbox.OutboxEmitter;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.hibernate.Session;

/**
 * The business effect of an order's events: for each OrderCreated, every line reserved, or none and
 * the order rejected; for each OrderCancelled, what the order reserved released ({@link StockReleases}).
 * Each is told back to order-service ({@link InventoryReserved} / {@link InventoryRejected} /
 * {@link InventoryReleased} in this service's outbox, in the same transaction as the inbox row and the
 * stock). A batch of orders costs six statements with the inbox's (lock the products, claim each
 * order with its decision, update the stock, insert the reservations, insert the replies), not six
 * per order.
 *
 * <p>A batch is applied in the order it arrived, a run of one event type at a time: an order's
 * cancellation behind its creation in the same batch sees the reservation it releases, and one in
 * front of it (a reordering) leaves the tombstone that the creation then finds.
 *
 * <p>{@code MANDATORY}: it only runs inside the inbox handler's transaction, after the message ids
 * were claimed, so no caller can apply an effect that bypasses deduplication.
 *
 * <p>Policy: an unknown SKU, or a SKU listed twice, rejects the order as a business outcome (the
 * event is valid; we cannot serve it). It is acked, not dead-lettered.
 */
@ApplicationScoped
public class StockReservations implements BatchEffects<OrderEvent> {

    /** What a creation that arrives after its order's cancellation (a tombstone) does: nothing. */
    static final String AFTER_CANCELLATION = "AFTER_CANCELLATION";

    private final EntityManager em;
    private final OutboxEmitter outbox;
    /** Off only for the fault-injection negative control ({@code inbox.unsafe.disable-deduplication}). */
    private final boolean guardEffect;
    private final StockReleases releases;

    StockReservations(EntityManager em, OutboxEmitter outbox, DeduplicationGuard deduplication) {
        this.em = em;
        this.outbox = outbox;
        this.guardEffect = deduplication.deduplicating();
        this.releases = new StockReleases(guardEffect);
    }

    /** @param traceparent the trace of the message that decided it: the reply continues it */
    private record Decision(UUID orderId, String messageId, OrderOutcome.Status status, String reason, List<OrderCreated.Line> lines,
                            String traceparent) {
    }

    /**
     * @return per message id, what it did: {@code RESERVED} or {@code REJECTED} for a creation
     *         ({@value #AFTER_CANCELLATION} when its order's cancellation came first), for a cancellation
     *         {@code RELEASED}, {@code NOTHING_RESERVED} or {@code CANCELLED_FIRST}; a message whose order
     *         already had that effect (another message id for the same order) is absent: it changed nothing
     */
    @Override
    @Transactional(Transactional.TxType.MANDATORY)
    public Map<String, String> apply(List<InboxMessage<OrderEvent>> fresh) {
        Map<String, String> statuses = new LinkedHashMap<>();
        int start = 0;
        while (start < fresh.size()) {
            boolean creations = fresh.get(start).payload() instanceof OrderCreated;
            int end = start + 1;
            while (end < fresh.size() && (fresh.get(end).payload() instanceof OrderCreated) == creations) {
                end++;
            }
            List<InboxMessage<OrderEvent>> run = fresh.subList(start, end);
            if (creations) {
                reserveAll(narrow(run, OrderCreated.class), statuses);
            } else {
                releaseAll(narrow(run, OrderCancelled.class), statuses);
            }
            start = end;
        }
        return statuses;
    }

    private void reserveAll(List<InboxMessage<OrderCreated>> orders, Map<String, String> statuses) {
        List<Decision> decisions = new ArrayList<>();
        statuses.putAll(em.unwrap(Session.class).doReturningWork(connection -> reserve(connection, orders, decisions)));
        outbox.sendTraced(decisions.stream().map(StockReservations::reply).toList());
    }

    private void releaseAll(List<InboxMessage<OrderCancelled>> cancellations, Map<String, String> statuses) {
        List<StockReleases.Release> released = em.unwrap(Session.class).doReturningWork(connection -> releases.release(connection, cancellations));
        released.forEach(release -> statuses.put(release.messageId(), release.result()));
        outbox.sendTraced(released.stream().map(StockReservations::reply).toList());
    }

    private static <E extends OrderEvent> List<InboxMessage<E>> narrow(List<InboxMessage<OrderEvent>> run, Class<E> type) {
        return run.stream().map(m -> new InboxMessage<>(m.messageId(), m.type(), type.cast(m.payload()), m.traceparent())).toList();
    }

    /** What order-service learns of a cancellation: what was released, maybe nothing. */
    private static OutboxEmitter.Traced reply(StockReleases.Release release) {
        return new OutboxEmitter.Traced(new InventoryReleased(EventIds.next(), release.orderId(), release.lines(), Instant.now()),
                release.traceparent());
    }

    /** The decision as order-service learns it: a new event, of inventory, about the order. */
    private static OutboxEmitter.Traced reply(Decision decision) {
        Instant now = Instant.now();
        UUID eventId = EventIds.next();
        InventoryEvent event = decision.status() == OrderOutcome.Status.RESERVED
                ? new InventoryReserved(eventId, decision.orderId(), now)
                : new InventoryRejected(eventId, decision.orderId(), decision.reason(), now);
        return new OutboxEmitter.Traced(event, decision.traceparent());
    }

    /** An order of one unit of a SKU that has stock: it writes every table a real order writes. */
    @Override
    public InboxMessage<OrderEvent> probe() {
        @SuppressWarnings("unchecked")
        List<String> skus = em.createNativeQuery(
                "SELECT sku FROM products WHERE on_hand > reserved ORDER BY sku LIMIT 1").getResultList();
        OrderCreated probe = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "inbox-probe",
                List.of(new OrderCreated.Line(skus.isEmpty() ? "INBOX-PROBE" : skus.get(0), 1)), Instant.now());
        return new InboxMessage<>(probe.eventId().toString(), OrderCreated.TYPE, probe);
    }

    private Map<String, String> reserve(Connection connection, List<InboxMessage<OrderCreated>> events, List<Decision> decisions)
            throws SQLException {
        Map<String, String> statuses = new LinkedHashMap<>();
        if (events.isEmpty()) {
            return statuses;
        }
        // Only the first message of an order in a batch may decide it.
        Map<UUID, InboxMessage<OrderCreated>> candidates = new LinkedHashMap<>();
        events.forEach(event -> candidates.putIfAbsent(event.payload().orderId(), event));
        Map<String, Integer> stock = lockProducts(connection, candidates.values());

        // Decided in memory, then claimed with the decision itself: one write per order, not two.
        List<Decision> decided = decide(candidates.values(), stock);
        Set<UUID> claimed = claimOrders(connection, decided);
        List<InboxMessage<OrderCreated>> owned = candidates.values().stream()
                .filter(event -> claimed.contains(event.payload().orderId())).toList();
        if (owned.size() < candidates.size()) {
            afterCancellation(connection, candidates.values(), claimed, statuses);
            // Some order was decided before, under another message id: its stock stays free for the
            // others, so decide the owned ones again from the same locked stock, and correct their rows.
            List<Decision> redecided = decide(owned, stock);
            correctDecisions(connection, decided, redecided);
            decided = redecided;
        }
        Map<String, Integer> reservedBySku = new TreeMap<>();
        List<Object[]> reservations = new ArrayList<>();
        for (Decision decision : decided) {
            decision.lines().forEach(line -> {
                reservedBySku.merge(line.sku(), line.quantity(), Integer::sum);
                reservations.add(new Object[] {decision.orderId(), line.sku(), line.quantity()});
            });
        }
        decided.forEach(decision -> statuses.put(decision.messageId(), decision.status().name()));
        decisions.addAll(decided);
        updateStock(connection, reservedBySku);
        insertReservations(connection, reservations);
        return statuses;
    }

    /**
     * Every line reserved, or none and the order rejected, in arrival order, from the locked stock
     * (which is not changed: each call starts from the same snapshot).
     */
    private static List<Decision> decide(Collection<InboxMessage<OrderCreated>> orders, Map<String, Integer> stock) {
        Map<String, Integer> available = new HashMap<>(stock);
        List<Decision> decisions = new ArrayList<>(orders.size());
        for (InboxMessage<OrderCreated> received : orders) {
            OrderCreated order = received.payload();
            String rejection = rejectionReason(order, available);
            if (rejection == null) {
                order.lines().forEach(line -> available.merge(line.sku(), -line.quantity(), Integer::sum));
                decisions.add(new Decision(order.orderId(), received.messageId(), OrderOutcome.Status.RESERVED, null, order.lines(),
                        received.traceparent()));
            } else {
                decisions.add(new Decision(order.orderId(), received.messageId(), OrderOutcome.Status.REJECTED, rejection, List.of(),
                        received.traceparent()));
            }
        }
        return decisions;
    }

    /**
     * The outcome's primary key is the effect's own unique key: a second event for an order
     * (another message id) finds it taken and decides nothing.
     */
    private Set<UUID> claimOrders(Connection connection, List<Decision> decisions) throws SQLException {
        Set<UUID> claimed = new HashSet<>();
        try (PreparedStatement claim = connection.prepareStatement("""
                INSERT INTO order_outcomes (order_id, status, reason, message_id, decided_at)
                SELECT order_id, status, reason, message_id, ? FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[])
                    AS c(order_id, status, reason, message_id)
                ON CONFLICT (order_id) %s
                RETURNING order_id""".formatted(guardEffect ? "DO NOTHING"
                // Without deduplication a repeated creation decides again (visibly), but a tombstone is the
                // cancellation's, not a duplicate's: it still holds.
                : "DO UPDATE SET message_id = excluded.message_id, status = excluded.status, reason = excluded.reason"
                        + " WHERE order_outcomes.status <> 'CANCELLED_FIRST'"))) {
            claim.setTimestamp(1, Timestamp.from(Instant.now()));
            claim.setArray(2, connection.createArrayOf("uuid", decisions.stream().map(Decision::orderId).toArray()));
            claim.setArray(3, connection.createArrayOf("text", decisions.stream().map(d -> d.status().name()).toArray()));
            claim.setArray(4, connection.createArrayOf("text", decisions.stream().map(Decision::reason).toArray()));
            claim.setArray(5, connection.createArrayOf("text", decisions.stream().map(Decision::messageId).toArray()));
            try (ResultSet rs = claim.executeQuery()) {
                while (rs.next()) {
                    claimed.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return claimed;
    }

    /**
     * The orders not claimed whose outcome is a tombstone: their cancellation arrived first (a
     * reordering, logged). They reserve nothing and send no reply (the release already told
     * order-service); acknowledged as {@value #AFTER_CANCELLATION}, not as duplicates.
     */
    private static void afterCancellation(Connection connection, Collection<InboxMessage<OrderCreated>> candidates, Set<UUID> claimed,
            Map<String, String> statuses) throws SQLException {
        Map<UUID, InboxMessage<OrderCreated>> unclaimed = new HashMap<>();
        candidates.stream().filter(event -> !claimed.contains(event.payload().orderId()))
                .forEach(event -> unclaimed.put(event.payload().orderId(), event));
        try (PreparedStatement select = connection.prepareStatement(
                "SELECT order_id FROM order_outcomes WHERE order_id = ANY(?) AND status = 'CANCELLED_FIRST'")) {
            select.setArray(1, connection.createArrayOf("uuid", unclaimed.keySet().toArray()));
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    InboxMessage<OrderCreated> late = unclaimed.get(rs.getObject(1, UUID.class));
                    Log.warnf("Order %s arrived (%s) after its cancellation (a reordering): it reserves nothing",
                            late.payload().orderId(), late.messageId());
                    statuses.put(late.messageId(), AFTER_CANCELLATION);
                }
            }
        }
    }

    /** The rare second pass: the owned orders whose decision (status or reason) changed once the others' claims failed. */
    private static void correctDecisions(Connection connection, List<Decision> first, List<Decision> second) throws SQLException {
        Map<UUID, Decision> before = new HashMap<>();
        first.forEach(d -> before.put(d.orderId(), d));
        List<Decision> changed = second.stream()
                .filter(d -> !before.get(d.orderId()).equals(d)).toList();
        if (changed.isEmpty()) {
            return;
        }
        try (PreparedStatement update = connection.prepareStatement("""
                UPDATE order_outcomes o SET status = d.status, reason = d.reason
                FROM unnest(?::uuid[], ?::text[], ?::text[]) AS d(order_id, status, reason)
                WHERE o.order_id = d.order_id""")) {
            update.setArray(1, connection.createArrayOf("uuid", changed.stream().map(Decision::orderId).toArray()));
            update.setArray(2, connection.createArrayOf("text", changed.stream().map(d -> d.status().name()).toArray()));
            update.setArray(3, connection.createArrayOf("text", changed.stream().map(Decision::reason).toArray()));
            update.executeUpdate();
        }
    }

    /** Locks the products in SKU order, so two transactions never wait on each other in a circle. */
    private Map<String, Integer> lockProducts(Connection connection, Collection<InboxMessage<OrderCreated>> owned) throws SQLException {
        Set<String> skus = new TreeSet<>();
        owned.forEach(e -> e.payload().lines().forEach(line -> skus.add(line.sku())));
        Map<String, Integer> available = new HashMap<>();
        try (PreparedStatement lock = connection.prepareStatement(
                "SELECT sku, on_hand - reserved FROM products WHERE sku = ANY(?) ORDER BY sku FOR UPDATE")) {
            lock.setArray(1, connection.createArrayOf("text", skus.toArray()));
            try (ResultSet rs = lock.executeQuery()) {
                while (rs.next()) {
                    available.put(rs.getString(1), rs.getInt(2));
                }
            }
        }
        return available;
    }

    private static String rejectionReason(OrderCreated order, Map<String, Integer> available) {
        Set<String> seen = new HashSet<>();
        for (OrderCreated.Line line : order.lines()) {
            if (!seen.add(line.sku())) {
                return "SKU " + line.sku() + " appears on more than one line";
            }
            Integer stock = available.get(line.sku());
            if (stock == null) {
                return "unknown SKU " + line.sku();
            }
            if (stock < line.quantity()) {
                return "insufficient stock for " + line.sku() + ": " + line.quantity() + " wanted, " + stock + " available";
            }
        }
        return null;
    }

    private static void updateStock(Connection connection, Map<String, Integer> reservedBySku) throws SQLException {
        if (reservedBySku.isEmpty()) {
            return;
        }
        try (PreparedStatement update = connection.prepareStatement("""
                UPDATE products p SET reserved = p.reserved + d.quantity
                FROM unnest(?::text[], ?::int[]) AS d(sku, quantity) WHERE p.sku = d.sku""")) {
            update.setArray(1, connection.createArrayOf("text", reservedBySku.keySet().toArray()));
            update.setArray(2, connection.createArrayOf("int4", reservedBySku.values().toArray()));
            update.executeUpdate();
        }
    }

    private void insertReservations(Connection connection, List<Object[]> reservations) throws SQLException {
        if (reservations.isEmpty()) {
            return;
        }
        try (PreparedStatement insert = connection.prepareStatement("""
                INSERT INTO reservations (order_id, sku, quantity)
                SELECT * FROM unnest(?::uuid[], ?::text[], ?::int[])"""
                + (guardEffect ? "" : " ON CONFLICT (order_id, sku) DO UPDATE SET quantity = reservations.quantity + excluded.quantity"))) {
            insert.setArray(1, column(connection, "uuid", reservations, 0));
            insert.setArray(2, column(connection, "text", reservations, 1));
            insert.setArray(3, column(connection, "int4", reservations, 2));
            insert.executeUpdate();
        }
    }

    private static Array column(Connection connection, String type, List<Object[]> rows, int index) throws SQLException {
        return connection.createArrayOf(type, rows.stream().map(row -> row[index]).toArray());
    }
}
