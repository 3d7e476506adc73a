package dev.outboxinbox.system;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Events read back from the outbox and published straight to the broker again, exactly as the
 * relay published them (message id, exchange, routing key, headers, body): the duplicates that
 * at-least-once delivery produces after a crash, made on purpose.
 * <p>
 * A relay sends copies in the order it sent the originals, so a copy never overtakes an earlier
 * event of its aggregate. A replay keeps to that: an event is published after a copy of every
 * earlier event of its aggregate ({@link OutboxEvent#earlier()}), or an OrderCancelled copy could
 * reach inventory before the order's OrderCreated while the relay is behind, a reordering the
 * harness made, not the system. Only events for the system's own exchanges are read: a row the
 * run wrote for an exchange the broker refuses was never published, so there is nothing to copy.
 */
public final class Replay {

    /** @param earlier the earlier events of the same aggregate, oldest first (published before this one) */
    public record OutboxEvent(String id, String exchange, String aggregateId, String type, int schemaVersion, String payload,
                              List<OutboxEvent> earlier) {

        public OutboxEvent(String id, String exchange, String aggregateId, String type, int schemaVersion, String payload) {
            this(id, exchange, aggregateId, type, schemaVersion, payload, List.of());
        }
    }

    private Replay() {
    }

    /** The newest events in the outbox, newest first, each with the earlier events of its aggregate. */
    public static List<OutboxEvent> newest(Database orders, int limit) throws SQLException {
        List<OutboxEvent> events = new ArrayList<>();
        try (var c = orders.connect(); PreparedStatement query = c.prepareStatement(
                "SELECT id::text, aggregatetype, aggregateid, type, schema_version, payload::text,"
                        + " (SELECT coalesce(json_agg(json_build_array(e.id::text, e.type, e.schema_version, e.payload::text)"
                        + "   ORDER BY e.occurred_at, e.id), '[]')::text"
                        + "  FROM outbox e WHERE e.aggregatetype = o.aggregatetype AND e.aggregateid = o.aggregateid"
                        + "   AND (e.occurred_at, e.id) < (o.occurred_at, o.id))"
                        + " FROM outbox o WHERE aggregatetype IN (?, ?) ORDER BY occurred_at DESC, id DESC LIMIT ?")) {
            query.setString(1, Topology.ORDERS_EXCHANGE);
            query.setString(2, Topology.INVENTORY_EXCHANGE);
            query.setInt(3, limit);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    List<OutboxEvent> earlier = new ArrayList<>();
                    for (var row : JSON.readTree(rs.getString(7))) {
                        earlier.add(new OutboxEvent(row.get(0).asText(), rs.getString(2), rs.getString(3), row.get(1).asText(),
                                row.get(2).asInt(), row.get(3).asText()));
                    }
                    events.add(new OutboxEvent(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getInt(5), rs.getString(6), List.copyOf(earlier)));
                }
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException("unreadable earlier events from " + orders, e);
            }
        }
        return events;
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    /**
     * Publishes the events again, mandatory and persistent, each after its aggregate's earlier events
     * (copies too, unless this call already sent them), and waits for the broker's confirms.
     * @return how many messages were published (the events and the earlier ones sent before them)
     */
    public static int publish(Broker broker, List<OutboxEvent> events) throws Exception {
        Set<String> sent = new HashSet<>();
        int published = 0;
        try (Connection connection = broker.connectionFactory().newConnection("replay");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            for (OutboxEvent event : events) {
                for (OutboxEvent before : event.earlier()) {
                    if (sent.add(before.id())) {
                        publish(channel, before);
                        published++;
                    }
                }
                sent.add(event.id());
                publish(channel, event);
                published++;
            }
            channel.waitForConfirmsOrDie(10_000);
        }
        return published;
    }

    private static void publish(Channel channel, OutboxEvent event) throws java.io.IOException {
        Map<String, Object> headers = new HashMap<>();
        headers.put(MessageHeaders.AGGREGATE_TYPE, event.exchange());
        headers.put(MessageHeaders.AGGREGATE_ID, event.aggregateId());
        headers.put(MessageHeaders.SCHEMA_VERSION, event.schemaVersion());
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                .messageId(event.id()).type(event.type()).contentType(MessageHeaders.CONTENT_TYPE)
                .deliveryMode(2).headers(headers).build();
        channel.basicPublish(event.exchange(), event.type(), true, properties, event.payload().getBytes(StandardCharsets.UTF_8));
    }
}
