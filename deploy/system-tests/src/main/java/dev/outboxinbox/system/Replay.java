package dev.outboxinbox.system;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.MessageHeaders;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Events read back from the outbox and published straight to the broker again, exactly as the
 * relay published them (message id, exchange, routing key, headers, body): the duplicates that
 * at-least-once delivery produces after a crash, made on purpose.
 */
public final class Replay {

    public record OutboxEvent(String id, String exchange, String aggregateId, String type, int schemaVersion, String payload) {
    }

    private Replay() {
    }

    /** The newest events in the outbox, newest first. */
    public static List<OutboxEvent> newest(Database orders, int limit) throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        try (var c = orders.connect(); PreparedStatement query = c.prepareStatement(
                "SELECT id::text, aggregatetype, aggregateid, type, schema_version, payload::text"
                        + " FROM outbox ORDER BY occurred_at DESC LIMIT ?")) {
            query.setInt(1, limit);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    events.add(new OutboxEvent(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getInt(5), rs.getString(6)));
                }
            }
        }
        return events;
    }

    /** Publishes the events again, mandatory and persistent, and waits for the broker's confirms. */
    public static void publish(Broker broker, List<OutboxEvent> events) throws Exception {
        try (Connection connection = broker.connectionFactory().newConnection("replay");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            for (OutboxEvent event : events) {
                Map<String, Object> headers = new HashMap<>();
                headers.put(MessageHeaders.AGGREGATE_TYPE, event.exchange());
                headers.put(MessageHeaders.AGGREGATE_ID, event.aggregateId());
                headers.put(MessageHeaders.SCHEMA_VERSION, event.schemaVersion());
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(event.id()).type(event.type()).contentType(MessageHeaders.CONTENT_TYPE)
                        .deliveryMode(2).headers(headers).build();
                channel.basicPublish(event.exchange(), event.type(), true, properties, event.payload().getBytes(StandardCharsets.UTF_8));
            }
            channel.waitForConfirmsOrDie(10_000);
        }
    }
}
