package dev.outboxinbox.inventory.stock;

import dev.outboxinbox.events.OrderCreated;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The business effect of an order: every line reserved, or none and the order rejected.
 *
 * <p>{@code MANDATORY}: it only runs inside the inbox handler's transaction, after the message id
 * was claimed, so no caller can apply an effect that bypasses deduplication.
 *
 * <p>Policy: an unknown SKU, or a SKU listed twice, rejects the order as a business outcome (the
 * event is valid; we just cannot serve it). It is acked, not dead-lettered.
 */
@ApplicationScoped
public class StockReservations {

    private final EntityManager em;

    StockReservations(EntityManager em) {
        this.em = em;
    }

    @Transactional(Transactional.TxType.MANDATORY)
    public OrderOutcome.Status reserve(OrderCreated order, String messageId) {
        // The order outcome's primary key is the effect's own unique key: a second event for this
        // order (another message id) finds it taken and changes nothing.
        int claimed = em.createNativeQuery("""
                        INSERT INTO order_outcomes (order_id, status, message_id, decided_at)
                        VALUES (?1, 'REJECTED', ?2, ?3) ON CONFLICT (order_id) DO NOTHING""")
                .setParameter(1, order.orderId()).setParameter(2, messageId).setParameter(3, Instant.now())
                .executeUpdate();
        if (claimed == 0) {
            return null;
        }
        String rejection = rejectionReason(order);
        if (rejection != null) {
            decide(order, OrderOutcome.Status.REJECTED, rejection);
            return OrderOutcome.Status.REJECTED;
        }
        for (OrderCreated.Line line : order.lines()) {
            em.createNativeQuery("UPDATE products SET reserved = reserved + ?1 WHERE sku = ?2")
                    .setParameter(1, line.quantity()).setParameter(2, line.sku()).executeUpdate();
            em.createNativeQuery("INSERT INTO reservations (order_id, sku, quantity) VALUES (?1, ?2, ?3)")
                    .setParameter(1, order.orderId()).setParameter(2, line.sku()).setParameter(3, line.quantity())
                    .executeUpdate();
        }
        decide(order, OrderOutcome.Status.RESERVED, null);
        return OrderOutcome.Status.RESERVED;
    }

    /**
     * Locks the order's products in SKU order (so two transactions never wait on each other in a
     * circle) and says why the order cannot be served, or null if every line can.
     */
    private String rejectionReason(OrderCreated order) {
        Map<String, Integer> wanted = new HashMap<>();
        for (OrderCreated.Line line : order.lines()) {
            if (wanted.put(line.sku(), line.quantity()) != null) {
                return "SKU " + line.sku() + " appears on more than one line";
            }
        }
        List<String> skus = wanted.keySet().stream().sorted(Comparator.naturalOrder()).toList();
        @SuppressWarnings("unchecked")
        List<Object[]> rows = em.createNativeQuery(
                        "SELECT sku, on_hand - reserved FROM products WHERE sku = ANY(?1) ORDER BY sku FOR UPDATE")
                .setParameter(1, skus.toArray(String[]::new)).getResultList();
        Map<String, Integer> available = new HashMap<>();
        rows.forEach(row -> available.put((String) row[0], ((Number) row[1]).intValue()));
        for (String sku : skus) {
            Integer stock = available.get(sku);
            if (stock == null) {
                return "unknown SKU " + sku;
            }
            if (stock < wanted.get(sku)) {
                return "insufficient stock for " + sku + ": " + wanted.get(sku) + " wanted, " + stock + " available";
            }
        }
        return null;
    }

    private void decide(OrderCreated order, OrderOutcome.Status status, String reason) {
        em.createNativeQuery("UPDATE order_outcomes SET status = ?1, reason = ?2 WHERE order_id = ?3")
                .setParameter(1, status.name()).setParameter(2, reason).setParameter(3, order.orderId())
                .executeUpdate();
    }
}
