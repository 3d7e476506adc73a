package dev.outboxinbox.inventory.stock;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.InventoryConfig;
import dev.outboxinbox.inventory.inbox.BatchEffects;
import dev.outboxinbox.inventory.inbox.InboxMessage;
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
 * The business effect of orders: for each, every line reserved, or none and the order rejected.
 * A batch of orders costs six statements, not six per order.
 *
 * <p>{@code MANDATORY}: it only runs inside the inbox handler's transaction, after the message ids
 * were claimed, so no caller can apply an effect that bypasses deduplication.
 *
 * <p>Policy: an unknown SKU, or a SKU listed twice, rejects the order as a business outcome (the
 * event is valid; we cannot serve it). It is acked, not dead-lettered.
 */
@ApplicationScoped
public class StockReservations implements BatchEffects<OrderCreated> {

    private final EntityManager em;
    /** Only for the fault-injection negative control: see {@link InventoryConfig.Unsafe}. */
    private final boolean guardEffect;

    StockReservations(EntityManager em, InventoryConfig config) {
        this.em = em;
        this.guardEffect = !config.unsafe().disableDeduplication();
    }

    private record Decision(UUID orderId, OrderOutcome.Status status, String reason) {
    }

    /**
     * @return per message id, the status it decided ({@code RESERVED} or {@code REJECTED}); a message
     *         whose order already had an outcome (another message id for the same order) is absent:
     *         it changed nothing
     */
    @Override
    @Transactional(Transactional.TxType.MANDATORY)
    public Map<String, String> apply(List<InboxMessage<OrderCreated>> fresh) {
        return em.unwrap(Session.class).doReturningWork(connection -> reserve(connection, fresh));
    }

    /** An order of one unit of a SKU that has stock: it writes every table a real order writes. */
    @Override
    public InboxMessage<OrderCreated> probe() {
        @SuppressWarnings("unchecked")
        List<String> skus = em.createNativeQuery(
                "SELECT sku FROM products WHERE on_hand > reserved ORDER BY sku LIMIT 1").getResultList();
        OrderCreated probe = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "inbox-probe",
                List.of(new OrderCreated.Line(skus.isEmpty() ? "INBOX-PROBE" : skus.get(0), 1)), Instant.now());
        return new InboxMessage<>(probe.eventId().toString(), OrderCreated.TYPE, probe);
    }

    private Map<String, String> reserve(Connection connection, List<InboxMessage<OrderCreated>> events) throws SQLException {
        Map<String, String> statuses = new LinkedHashMap<>();
        if (events.isEmpty()) {
            return statuses;
        }
        List<InboxMessage<OrderCreated>> owned = claimOrders(connection, events);
        Map<String, Integer> available = lockProducts(connection, owned);

        Map<String, Integer> reservedBySku = new TreeMap<>();
        List<Object[]> reservations = new ArrayList<>();
        List<Decision> decisions = new ArrayList<>();
        for (InboxMessage<OrderCreated> received : owned) {
            OrderCreated order = received.payload();
            String rejection = rejectionReason(order, available);
            if (rejection == null) {
                for (OrderCreated.Line line : order.lines()) {
                    available.merge(line.sku(), -line.quantity(), Integer::sum);
                    reservedBySku.merge(line.sku(), line.quantity(), Integer::sum);
                    reservations.add(new Object[] {order.orderId(), line.sku(), line.quantity()});
                }
                decisions.add(new Decision(order.orderId(), OrderOutcome.Status.RESERVED, null));
            } else {
                decisions.add(new Decision(order.orderId(), OrderOutcome.Status.REJECTED, rejection));
            }
            statuses.put(received.messageId(), decisions.get(decisions.size() - 1).status().name());
        }
        updateStock(connection, reservedBySku);
        insertReservations(connection, reservations);
        recordDecisions(connection, decisions);
        return statuses;
    }

    /**
     * The outcome's primary key is the effect's own unique key: a second event for an order
     * (another message id) finds it taken, and only the first message of an order in a batch owns it.
     */
    private List<InboxMessage<OrderCreated>> claimOrders(Connection connection, List<InboxMessage<OrderCreated>> events) throws SQLException {
        Set<UUID> claimed = new HashSet<>();
        try (PreparedStatement claim = connection.prepareStatement("""
                INSERT INTO order_outcomes (order_id, status, message_id, decided_at)
                SELECT order_id, 'REJECTED', message_id, ? FROM unnest(?::uuid[], ?::text[]) AS c(order_id, message_id)
                ON CONFLICT (order_id) %s
                RETURNING order_id""".formatted(guardEffect ? "DO NOTHING" : "DO UPDATE SET message_id = excluded.message_id"))) {
            claim.setTimestamp(1, Timestamp.from(Instant.now()));
            claim.setArray(2, connection.createArrayOf("uuid", events.stream().map(e -> e.payload().orderId()).toArray()));
            claim.setArray(3, connection.createArrayOf("text", events.stream().map(InboxMessage::messageId).toArray()));
            try (ResultSet rs = claim.executeQuery()) {
                while (rs.next()) {
                    claimed.add(rs.getObject(1, UUID.class));
                }
            }
        }
        List<InboxMessage<OrderCreated>> owned = new ArrayList<>();
        for (InboxMessage<OrderCreated> event : events) {
            if (claimed.remove(event.payload().orderId())) {
                owned.add(event);
            }
        }
        return owned;
    }

    /** Locks the products in SKU order, so two transactions never wait on each other in a circle. */
    private Map<String, Integer> lockProducts(Connection connection, List<InboxMessage<OrderCreated>> owned) throws SQLException {
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

    private static void recordDecisions(Connection connection, List<Decision> decisions) throws SQLException {
        if (decisions.isEmpty()) {
            return;
        }
        try (PreparedStatement update = connection.prepareStatement("""
                UPDATE order_outcomes o SET status = d.status, reason = d.reason
                FROM unnest(?::uuid[], ?::text[], ?::text[]) AS d(order_id, status, reason)
                WHERE o.order_id = d.order_id""")) {
            update.setArray(1, connection.createArrayOf("uuid", decisions.stream().map(Decision::orderId).toArray()));
            update.setArray(2, connection.createArrayOf("text", decisions.stream().map(d -> d.status().name()).toArray()));
            update.setArray(3, connection.createArrayOf("text", decisions.stream().map(Decision::reason).toArray()));
            update.executeUpdate();
        }
    }

    private static Array column(Connection connection, String type, List<Object[]> rows, int index) throws SQLException {
        return connection.createArrayOf(type, rows.stream().map(row -> row[index]).toArray());
    }
}
