package dev.outboxinbox.outbox;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Transactional;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.List;
import javax.sql.DataSource;

/**
 * Appends events to the outbox. {@code MANDATORY}: it can only join the transaction that changes
 * the business state, never commit an event on its own. The connection is that transaction's
 * (Agroal hands every caller inside one JTA transaction the same one), so the event commits or rolls
 * back with the caller's writes, whether those go through Hibernate or JDBC.
 */
@ApplicationScoped
public class OutboxWriter {

    private static final String COLUMNS = "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at) ";
    /** One event: a row of values (eight arrays for one row cost the driver and the server more: issue 29's profile). */
    private static final String INSERT_ONE = COLUMNS + "VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, ?)";
    /** Many events, whatever their number: one statement, one plan. */
    private static final String INSERT_MANY = COLUMNS
            + "SELECT * FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::int[], ?::jsonb[], ?::text[], ?::timestamptz[])";

    private final DataSource dataSource;
    private final OutboxMetrics metrics;

    OutboxWriter(DataSource dataSource, OutboxMetrics metrics) {
        this.dataSource = dataSource;
        this.metrics = metrics;
    }

    @Transactional(Transactional.TxType.MANDATORY)
    public void append(OutboxMessage message) {
        try (Connection connection = dataSource.getConnection(); PreparedStatement insert = connection.prepareStatement(INSERT_ONE)) {
            insert.setObject(1, message.id());
            insert.setString(2, message.aggregateType());
            insert.setString(3, message.aggregateId());
            insert.setString(4, message.type());
            insert.setInt(5, message.schemaVersion());
            insert.setString(6, message.payload());
            insert.setString(7, message.traceparent());
            insert.setTimestamp(8, Timestamp.from(message.occurredAt()));
            insert.executeUpdate();
        } catch (SQLException e) {
            throw new OutboxWriteException(e);
        }
        metrics.appendedInThisTransaction(List.of(message));
    }

    /** Many events in one statement: what a batch consumer that replies to each message uses. */
    @Transactional(Transactional.TxType.MANDATORY)
    public void appendAll(List<OutboxMessage> messages) {
        if (messages.isEmpty()) {
            return;
        }
        try (Connection connection = dataSource.getConnection(); PreparedStatement insert = connection.prepareStatement(INSERT_MANY)) {
            insert.setArray(1, connection.createArrayOf("uuid", messages.stream().map(OutboxMessage::id).toArray()));
            insert.setArray(2, connection.createArrayOf("text", messages.stream().map(OutboxMessage::aggregateType).toArray()));
            insert.setArray(3, connection.createArrayOf("text", messages.stream().map(OutboxMessage::aggregateId).toArray()));
            insert.setArray(4, connection.createArrayOf("text", messages.stream().map(OutboxMessage::type).toArray()));
            insert.setArray(5, connection.createArrayOf("int4", messages.stream().map(OutboxMessage::schemaVersion).toArray()));
            insert.setArray(6, connection.createArrayOf("text", messages.stream().map(OutboxMessage::payload).toArray()));
            insert.setArray(7, connection.createArrayOf("text", messages.stream().map(OutboxMessage::traceparent).toArray()));
            insert.setArray(8, connection.createArrayOf("timestamptz",
                    messages.stream().map(m -> Timestamp.from(m.occurredAt())).toArray()));
            insert.executeUpdate();
        } catch (SQLException e) {
            throw new OutboxWriteException(e);
        }
        metrics.appendedInThisTransaction(messages);
    }

    /** The database refused the event: the caller's transaction must roll back with it. */
    public static final class OutboxWriteException extends RuntimeException {
        OutboxWriteException(SQLException cause) {
            super("outbox insert failed: " + cause.getMessage(), cause);
        }
    }
}
