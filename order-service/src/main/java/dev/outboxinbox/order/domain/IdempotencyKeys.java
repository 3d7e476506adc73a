package dev.outboxinbox.order.domain;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.transaction.Transactional;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Claims an Idempotency-Key for an order, insert-first: the primary key decides. When two
 * requests with one key race, PostgreSQL makes the second {@code INSERT … ON CONFLICT} wait for
 * the first transaction; if that commits, the second sees the conflict and reads the winner's
 * order; if it rolls back, the second claims the key itself. No pre-check, no window.
 */
@ApplicationScoped
class IdempotencyKeys {

    private final EntityManager em;

    IdempotencyKeys(EntityManager em) {
        this.em = em;
    }

    /** @return empty if this transaction now owns the key; else the order that an earlier request with it created */
    @Transactional(Transactional.TxType.MANDATORY)
    Optional<UUID> claim(String key, String requestFingerprint, UUID orderId) {
        int inserted = em.createNativeQuery("""
                        INSERT INTO idempotency_keys (idempotency_key, request_hash, order_id)
                        VALUES (?1, ?2, ?3)
                        ON CONFLICT (idempotency_key) DO NOTHING""")
                .setParameter(1, key).setParameter(2, requestFingerprint).setParameter(3, orderId)
                .executeUpdate();
        if (inserted == 1) {
            return Optional.empty();
        }
        @SuppressWarnings("unchecked")
        List<Object[]> owner = em.createNativeQuery(
                        "SELECT request_hash, order_id FROM idempotency_keys WHERE idempotency_key = ?1")
                .setParameter(1, key).getResultList();
        Object[] row = owner.get(0);
        if (!requestFingerprint.equals(row[0])) {
            throw new IdempotencyKeyReusedException(key);
        }
        return Optional.of((UUID) row[1]);
    }
}
