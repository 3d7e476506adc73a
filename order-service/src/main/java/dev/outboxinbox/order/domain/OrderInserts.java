package dev.outboxinbox.order.domain;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Transactional;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Writes a new order in one statement, one round trip: the claim of its Idempotency-Key, the order and its
 * lines. This is the write path of {@code POST /orders}, the hottest in the system, so it is plain SQL through
 * the transaction's own connection (Agroal hands every caller inside one JTA transaction the same one);
 * Hibernate keeps the reads and the updates, where it reads well. issue 29's profile had Hibernate at a
 * quarter of order-service's CPU, and the order took four to six round trips.
 * <p>
 * The claim is insert-first: {@code INSERT … ON CONFLICT DO NOTHING}, and the order and its lines are
 * inserted from what the claim returned, so a key claimed already inserts nothing at all. When two requests
 * with one key race, PostgreSQL makes the second claim wait for the first transaction; if that commits, the
 * second finds the conflict and reads the winner's order; if it rolls back, the second claims the key itself.
 * No pre-check, no window. The statements of one {@code WITH} see one snapshot and run as one; the foreign
 * keys between the three tables are checked at its end (the key's at commit).
 */
@ApplicationScoped
class OrderInserts {

    /** The order and its lines, from the {@code claim} above them (one row: the order's id, or none). */
    private static final String ORDER_AND_LINES = """
            placed AS (
                INSERT INTO orders (id, customer_id, currency, placed_at, status)
                SELECT order_id, ?, ?, ?, 'PENDING' FROM claim
                RETURNING id),
            lines AS (
                INSERT INTO order_lines (order_id, line_no, sku, quantity, unit_price)
                SELECT placed.id, line.line_no - 1, line.sku, line.quantity, line.unit_price
                FROM placed, unnest(?::text[], ?::int[], ?::numeric[]) WITH ORDINALITY AS line (sku, quantity, unit_price, line_no))
            SELECT count(*) FROM placed
            """;
    /** With an Idempotency-Key: the claim decides whether anything is written. */
    private static final String WITH_KEY = """
            WITH claim AS (
                INSERT INTO idempotency_keys (idempotency_key, request_hash, order_id) VALUES (?, ?, ?)
                ON CONFLICT (idempotency_key) DO NOTHING
                RETURNING order_id),
            """ + ORDER_AND_LINES;
    /** Without one: nothing to claim, the order is new. */
    private static final String WITHOUT_KEY = "WITH claim AS (SELECT ?::uuid AS order_id),\n" + ORDER_AND_LINES;

    /**
     * The key belongs to an earlier request.
     *
     * @param fingerprint that request's ({@link PlaceOrder#fingerprint()}): the same request if equal
     */
    record Claimed(String fingerprint, UUID orderId) {
    }

    private final DataSource dataSource;

    OrderInserts(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Inserts the order {@code orderId}, with its key's claim if the command has a key.
     *
     * @return empty if the order was inserted; else who had claimed the key (nothing was written)
     */
    @Transactional(Transactional.TxType.MANDATORY)
    Optional<Claimed> insert(UUID orderId, PlaceOrder command, Instant placedAt) {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement insert = connection.prepareStatement(command.idempotencyKey().isPresent() ? WITH_KEY : WITHOUT_KEY)) {
            int index = 1;
            if (command.idempotencyKey().isPresent()) {
                insert.setString(index++, command.idempotencyKey().get());
                insert.setString(index++, command.fingerprint());
            }
            insert.setObject(index++, orderId);
            insert.setString(index++, command.customerId());
            insert.setString(index++, command.currency());
            insert.setTimestamp(index++, Timestamp.from(placedAt));
            List<OrderLine> lines = command.lines();
            insert.setArray(index++, connection.createArrayOf("text", lines.stream().map(line -> line.sku).toArray()));
            insert.setArray(index++, connection.createArrayOf("int4", lines.stream().map(line -> line.quantity).toArray()));
            insert.setArray(index, connection.createArrayOf("numeric", lines.stream().map(line -> line.unitPrice).toArray()));
            try (ResultSet placed = insert.executeQuery()) {
                placed.next();
                if (placed.getInt(1) == 1) {
                    return Optional.empty();
                }
            }
            return Optional.of(claimOf(connection, command.idempotencyKey().orElseThrow()));
        } catch (SQLException e) {
            throw new OrderInsertException(e);
        }
    }

    private static Claimed claimOf(Connection connection, String key) throws SQLException {
        try (PreparedStatement select = connection.prepareStatement(
                "SELECT request_hash, order_id FROM idempotency_keys WHERE idempotency_key = ?")) {
            select.setString(1, key);
            try (ResultSet owner = select.executeQuery()) {
                if (!owner.next()) {
                    // The claim found a conflict; the row that caused it is committed (ON CONFLICT waited for it).
                    throw new IllegalStateException("Idempotency-Key " + key + " was claimed, but its row is not there");
                }
                return new Claimed(owner.getString(1), owner.getObject(2, UUID.class));
            }
        }
    }

    /** The database refused the order: the transaction rolls back with it. */
    static final class OrderInsertException extends RuntimeException {
        OrderInsertException(SQLException cause) {
            super("order insert failed: " + cause.getMessage(), cause);
        }
    }
}
