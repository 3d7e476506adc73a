package dev.outboxinbox.inventory.stock;

import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.inbox.InboxMessage;
import io.quarkus.logging.Log;
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
import java.util.UUID;

/**
 * The business effect of cancellations, a run of them at a time, inside the inbox's transaction
 * ({@link StockReservations#apply} calls it): each cancelled order gives back what it reserved, once,
 * and the reply says what that was.
 * <ul>
 *   <li>its outcome is RESERVED: every reservation line is released ({@code products.reserved} down by
 *       it, a {@code releases} row per line; the {@code reservations} rows stay, as history);</li>
 *   <li>REJECTED: nothing was reserved, nothing is released;</li>
 *   <li>no outcome yet: the cancellation overtook the order's creation (a reordering). A tombstone,
 *       outcome {@code CANCELLED_FIRST}, takes the order's key, so the late OrderCreated reserves
 *       nothing; nothing is released.</li>
 * </ul>
 * Always a {@code cancellations} row (its primary key makes the release once, whatever the message
 * id) and an {@link InventoryReleased} reply naming what was released (no lines when nothing was).
 *
 * <p>Racing the order's creation on another instance (a partition handed over while both run): the
 * tombstone's INSERT waits on the creation's uncommitted outcome row and, once that commits, finds
 * it taken; the outcome and its reservation lines are then read by later statements, each with a
 * snapshot that includes the creation's commit (a single statement would keep the snapshot it began
 * with, see the outcome, and miss the lines). An outcome RESERVED whose lines cannot be seen is
 * never released as zero: it fails the transaction as transient, and the inbox retries it.
 */
final class StockReleases {

    /** Every line of a reserved order released. */
    static final String RELEASED = "RELEASED";
    /** The order was rejected: nothing held, nothing released. */
    static final String NOTHING_RESERVED = "NOTHING_RESERVED";
    /** The cancellation came first: a tombstone, nothing released. */
    static final String CANCELLED_FIRST = "CANCELLED_FIRST";
    /** SQLSTATE serialization_failure: a state the inbox retries (with backoff) rather than parks. */
    static final String RETRY = "40001";

    /** What one cancellation did: the reply to write and the word for the inbox's log. */
    record Release(UUID orderId, String messageId, String result, List<InventoryReleased.Line> lines, String traceparent) {
    }

    /** Off only for the fault-injection negative control ({@code inbox.unsafe.disable-deduplication}). */
    private final boolean guardEffect;

    StockReleases(boolean guardEffect) {
        this.guardEffect = guardEffect;
    }

    /** @return one release per cancellation that took effect, in arrival order; one whose order was cancelled before is absent */
    List<Release> release(Connection connection, List<InboxMessage<OrderCancelled>> cancellations) throws SQLException {
        // Only the first message of an order in a run may cancel it (as for creations).
        Map<UUID, InboxMessage<OrderCancelled>> candidates = new LinkedHashMap<>();
        cancellations.forEach(message -> candidates.putIfAbsent(message.payload().orderId(), message));
        Instant now = Instant.now();
        Set<UUID> claimed = claimCancellations(connection, candidates.values(), now);
        List<InboxMessage<OrderCancelled>> owned = candidates.values().stream()
                .filter(message -> claimed.contains(message.payload().orderId())).toList();
        if (owned.isEmpty()) {
            return List.of();
        }
        Set<UUID> tombstoned = tombstones(connection, owned, now);
        Set<UUID> decided = new HashSet<>(claimed);
        decided.removeAll(tombstoned);
        // Separate statements from here on: each sees what committed while the tombstone's INSERT waited.
        Map<UUID, String> outcomes = outcomes(connection, decided);
        Set<UUID> reserved = new HashSet<>();
        for (UUID orderId : decided) {
            String status = outcomes.get(orderId);
            if (status == null) {
                throw new SQLException("order " + orderId + " has neither an outcome nor a tombstone after the tombstone's insert"
                        + " conflicted; retrying", RETRY);
            }
            if (OrderOutcome.Status.RESERVED.name().equals(status)) {
                reserved.add(orderId);
            }
        }
        Map<UUID, List<InventoryReleased.Line>> lines = reservations(connection, reserved);
        for (UUID orderId : reserved) {
            if (!lines.containsKey(orderId)) {
                // Never release zero for a reserved order: its lines are committed with its outcome, so this is a
                // snapshot that misses them; the next attempt sees them.
                throw new SQLException("order " + orderId + " is RESERVED but its reservation lines are not visible yet;"
                        + " retrying rather than releasing nothing", RETRY);
            }
        }
        giveBack(connection, lines);

        List<Release> releases = new ArrayList<>(owned.size());
        for (InboxMessage<OrderCancelled> message : owned) {
            UUID orderId = message.payload().orderId();
            String result;
            if (tombstoned.contains(orderId)) {
                Log.warnf("Order %s: its cancellation %s arrived before the order itself (a reordering); tombstone %s,"
                        + " nothing to release, and the order reserves nothing if it arrives", orderId, message.messageId(), CANCELLED_FIRST);
                result = CANCELLED_FIRST;
            } else if (reserved.contains(orderId)) {
                result = RELEASED;
            } else {
                result = OrderOutcome.Status.CANCELLED_FIRST.name().equals(outcomes.get(orderId)) ? CANCELLED_FIRST : NOTHING_RESERVED;
            }
            releases.add(new Release(orderId, message.messageId(), result, lines.getOrDefault(orderId, List.of()),
                    message.traceparent()));
        }
        return releases;
    }

    /**
     * The release's own key: one cancellation per order. Without deduplication (the negative control)
     * a cancellation delivered again claims the order again, and releases again: visibly.
     */
    private Set<UUID> claimCancellations(Connection connection, java.util.Collection<InboxMessage<OrderCancelled>> cancellations,
            Instant now) throws SQLException {
        try (PreparedStatement claim = connection.prepareStatement("""
                INSERT INTO cancellations (order_id, message_id, cancelled_at)
                SELECT order_id, message_id, ? FROM unnest(?::uuid[], ?::text[]) AS c(order_id, message_id)
                ON CONFLICT (order_id) %s
                RETURNING order_id""".formatted(guardEffect ? "DO NOTHING" : "DO UPDATE SET message_id = excluded.message_id"))) {
            claim.setTimestamp(1, Timestamp.from(now));
            claim.setArray(2, connection.createArrayOf("uuid", cancellations.stream().map(m -> m.payload().orderId()).toArray()));
            claim.setArray(3, connection.createArrayOf("text", cancellations.stream().map(InboxMessage::messageId).toArray()));
            return uuids(claim);
        }
    }

    /**
     * A tombstone for every order without an outcome. Waits on an order's creation that is inserting
     * its outcome in another transaction; if that commits, the order is not tombstoned here.
     */
    private static Set<UUID> tombstones(Connection connection, List<InboxMessage<OrderCancelled>> owned, Instant now)
            throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement("""
                INSERT INTO order_outcomes (order_id, status, reason, message_id, decided_at)
                SELECT order_id, 'CANCELLED_FIRST', 'cancelled before the order arrived', message_id, ?
                FROM unnest(?::uuid[], ?::text[]) AS t(order_id, message_id)
                ON CONFLICT (order_id) DO NOTHING
                RETURNING order_id""")) {
            insert.setTimestamp(1, Timestamp.from(now));
            insert.setArray(2, connection.createArrayOf("uuid", owned.stream().map(m -> m.payload().orderId()).toArray()));
            insert.setArray(3, connection.createArrayOf("text", owned.stream().map(InboxMessage::messageId).toArray()));
            return uuids(insert);
        }
    }

    private static Map<UUID, String> outcomes(Connection connection, Set<UUID> orders) throws SQLException {
        Map<UUID, String> outcomes = new HashMap<>();
        if (orders.isEmpty()) {
            return outcomes;
        }
        try (PreparedStatement select = connection.prepareStatement("SELECT order_id, status FROM order_outcomes WHERE order_id = ANY(?)")) {
            select.setArray(1, connection.createArrayOf("uuid", orders.toArray()));
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    outcomes.put(rs.getObject(1, UUID.class), rs.getString(2));
                }
            }
        }
        return outcomes;
    }

    private static Map<UUID, List<InventoryReleased.Line>> reservations(Connection connection, Set<UUID> orders) throws SQLException {
        Map<UUID, List<InventoryReleased.Line>> lines = new HashMap<>();
        if (orders.isEmpty()) {
            return lines;
        }
        try (PreparedStatement select = connection.prepareStatement(
                "SELECT order_id, sku, quantity FROM reservations WHERE order_id = ANY(?) ORDER BY order_id, sku")) {
            select.setArray(1, connection.createArrayOf("uuid", orders.toArray()));
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    lines.computeIfAbsent(rs.getObject(1, UUID.class), id -> new ArrayList<>())
                            .add(new InventoryReleased.Line(rs.getString(2), rs.getInt(3)));
                }
            }
        }
        return lines;
    }

    /**
     * products.reserved down by every released line, and a releases row per line. The products are
     * locked in SKU order first, as the reservations lock them, so the two never wait in a circle.
     * With deduplication on, {@code reserved} is never clamped: going below zero would be a double
     * release, and the table's check fails the transaction loudly. Off (the negative control), it is
     * clamped at zero so that a double release commits and the verifier sees it.
     */
    private void giveBack(Connection connection, Map<UUID, List<InventoryReleased.Line>> lines) throws SQLException {
        if (lines.isEmpty()) {
            return;
        }
        Map<String, Integer> bySku = new TreeMap<>();
        List<Object[]> rows = new ArrayList<>();
        lines.forEach((orderId, orderLines) -> orderLines.forEach(line -> {
            bySku.merge(line.sku(), line.quantity(), Integer::sum);
            rows.add(new Object[] {orderId, line.sku(), line.quantity()});
        }));
        try (PreparedStatement lock = connection.prepareStatement(
                "SELECT sku FROM products WHERE sku = ANY(?) ORDER BY sku FOR UPDATE")) {
            lock.setArray(1, connection.createArrayOf("text", bySku.keySet().toArray()));
            lock.executeQuery().close();
        }
        try (PreparedStatement update = connection.prepareStatement("""
                UPDATE products p SET reserved = %s
                FROM unnest(?::text[], ?::int[]) AS d(sku, quantity) WHERE p.sku = d.sku"""
                .formatted(guardEffect ? "p.reserved - d.quantity" : "greatest(p.reserved - d.quantity, 0)"))) {
            update.setArray(1, connection.createArrayOf("text", bySku.keySet().toArray()));
            update.setArray(2, connection.createArrayOf("int4", bySku.values().toArray()));
            update.executeUpdate();
        }
        try (PreparedStatement insert = connection.prepareStatement("""
                INSERT INTO releases (order_id, sku, quantity)
                SELECT * FROM unnest(?::uuid[], ?::text[], ?::int[])"""
                + (guardEffect ? "" : " ON CONFLICT (order_id, sku) DO UPDATE SET quantity = releases.quantity + excluded.quantity"))) {
            insert.setArray(1, connection.createArrayOf("uuid", rows.stream().map(r -> r[0]).toArray()));
            insert.setArray(2, connection.createArrayOf("text", rows.stream().map(r -> r[1]).toArray()));
            insert.setArray(3, connection.createArrayOf("int4", rows.stream().map(r -> r[2]).toArray()));
            insert.executeUpdate();
        }
    }

    private static Set<UUID> uuids(PreparedStatement statement) throws SQLException {
        Set<UUID> ids = new HashSet<>();
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                ids.add(rs.getObject(1, UUID.class));
            }
        }
        return ids;
    }
}
