package dev.outboxinbox.relay;

import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import com.rabbitmq.client.AMQP;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * One outbox event, as the outbox event router shaped it, ready for RabbitMQ: the exchange is
 * the aggregate type, the routing key the event type, the {@code message_id} the event id.
 */
record OutboundMessage(String eventId, String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body) {

    /** Router headers we configure (see application.properties: table.fields.additional.placement). */
    static final String ROUTER_EVENT_ID = "id";
    static final String ROUTER_TYPE = "type";
    /**
     * On a malformed row's parked copy, why it is malformed. It stays on the copy through republishes, which
     * leave such a copy parked (it cannot be sent as it is) and never let it hold its aggregate.
     */
    static final String MALFORMED = "x-outbox-malformed";
    /** What a quorum queue adds to a message it delivers again. */
    static final String DELIVERY_COUNT = "x-delivery-count";

    /**
     * Whether the outbox event router shaped this record: it alone adds the event-id header. Heartbeats,
     * other tables' changes and logical messages reach the relay untouched (the router's predicate).
     */
    static boolean isRouted(SourceRecord record) {
        return header(record, ROUTER_EVENT_ID) != null;
    }

    /**
     * The message for a routed outbox row; for a row that lacks a field the contract needs (a
     * schema that drifted, a writer other than {@code OutboxWriter}), a copy addressed to the
     * relay's parking place with the reason, so that it neither stops the relay nor vanishes.
     */
    static OutboundMessage fromOrParked(SourceRecord record) {
        try {
            return from(record);
        } catch (RuntimeException malformed) {
            String eventId = header(record, ROUTER_EVENT_ID);
            String type = header(record, ROUTER_TYPE);
            Map<String, Object> headers = new HashMap<>();
            headers.put(MessageHeaders.AGGREGATE_TYPE, record.topic());
            headers.put(MessageHeaders.AGGREGATE_ID, String.valueOf(record.key()));
            headers.put(MessageHeaders.DEAD_LETTER_REASON, "malformed outbox row: " + malformed.getMessage());
            headers.put(MALFORMED, String.valueOf(malformed.getMessage()));
            headers.put(MessageHeaders.ORIGINAL_EXCHANGE, record.topic());
            headers.put(MessageHeaders.ORIGINAL_ROUTING_KEY, type == null ? "" : type);
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(eventId).type(type)
                    .contentType(MessageHeaders.CONTENT_TYPE).deliveryMode(2).timestamp(new Date()).headers(headers).build();
            byte[] body = record.value() == null ? new byte[0] : record.value().toString().getBytes(StandardCharsets.UTF_8);
            return new OutboundMessage(eventId, Topology.RELAY_PARKING_EXCHANGE, type == null ? "" : type, properties, body);
        }
    }

    /** Whether this message goes straight to the parking place (a malformed row), not to its exchange. */
    boolean malformed() {
        return Topology.RELAY_PARKING_EXCHANGE.equals(exchange);
    }

    static OutboundMessage from(SourceRecord record) {
        String eventId = requiredHeader(record, ROUTER_EVENT_ID);
        Object value = record.value();
        if (value == null) {
            throw new IllegalStateException("Outbox event " + eventId + " has no payload");
        }
        return of(eventId, record.topic(), String.valueOf(record.key()), requiredHeader(record, ROUTER_TYPE),
                Integer.parseInt(requiredHeader(record, MessageHeaders.SCHEMA_VERSION)),
                header(record, MessageHeaders.TRACEPARENT), committedAt(record), value.toString());
    }

    /** The transaction's commit time (our header from the WAL's source block); else the time Debezium read it. */
    private static long committedAt(SourceRecord record) {
        String committed = header(record, MessageHeaders.COMMITTED_AT);
        if (committed != null) {
            return Long.parseLong(committed);
        }
        return record.timestamp() != null ? record.timestamp() : System.currentTimeMillis();
    }

    /** The one place an outbox event becomes an AMQP message, whether it was read from the WAL or from the table. */
    static OutboundMessage of(String eventId, String aggregateType, String aggregateId, String type, int schemaVersion,
                              String traceparent, long committedAtMillis, String payload) {
        Map<String, Object> headers = new HashMap<>();
        headers.put(MessageHeaders.AGGREGATE_TYPE, aggregateType);
        headers.put(MessageHeaders.AGGREGATE_ID, aggregateId);
        headers.put(MessageHeaders.SCHEMA_VERSION, schemaVersion);
        headers.put(MessageHeaders.COMMITTED_AT, committedAtMillis);
        if (traceparent != null) {
            headers.put(MessageHeaders.TRACEPARENT, traceparent);
        }
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                .messageId(eventId)
                .type(type)
                .contentType(MessageHeaders.CONTENT_TYPE)
                .deliveryMode(2)
                .timestamp(new Date(committedAtMillis))
                .headers(headers)
                .build();
        return new OutboundMessage(eventId, aggregateType, type, properties, payload.getBytes(StandardCharsets.UTF_8));
    }

    /** The same message carrying another trace context (the relay's own span, a child of the row's). */
    OutboundMessage withTraceparent(String traceparent) {
        Map<String, Object> headers = new HashMap<>(properties.getHeaders());
        headers.put(MessageHeaders.TRACEPARENT, traceparent);
        return new OutboundMessage(eventId, exchange, routingKey, properties.builder().headers(headers).build(), body);
    }

    /** The copy that waits in the relay's parking queue: the same message, with why and where it was going. */
    OutboundMessage parked(String reason) {
        Map<String, Object> headers = new HashMap<>(properties.getHeaders());
        headers.put(MessageHeaders.DEAD_LETTER_REASON, reason);
        headers.put(MessageHeaders.ORIGINAL_EXCHANGE, exchange);
        headers.put(MessageHeaders.ORIGINAL_ROUTING_KEY, routingKey);
        return new OutboundMessage(eventId, Topology.RELAY_PARKING_EXCHANGE, routingKey,
                properties.builder().headers(headers).build(), body);
    }

    /** A parked message as it was first published: to its original exchange and routing key, without the parking queue's headers. */
    static OutboundMessage unparked(AMQP.BasicProperties parked, byte[] body) {
        Map<String, Object> headers = new HashMap<>(parked.getHeaders());
        String exchange = String.valueOf(headers.remove(MessageHeaders.ORIGINAL_EXCHANGE));
        String routingKey = String.valueOf(headers.remove(MessageHeaders.ORIGINAL_ROUTING_KEY));
        headers.remove(MessageHeaders.DEAD_LETTER_REASON);
        // The parking queue's count of this copy's deliveries, not the event's: a fresh copy starts again.
        headers.remove(DELIVERY_COUNT);
        return new OutboundMessage(parked.getMessageId(), exchange, routingKey, parked.builder().headers(headers).build(), body);
    }

    private static String requiredHeader(SourceRecord record, String name) {
        String value = header(record, name);
        if (value == null) {
            throw new IllegalStateException("Outbox record on " + record.topic() + " lacks header '" + name
                    + "'; is the outbox event router configured as in application.properties?");
        }
        return value;
    }

    private static String header(SourceRecord record, String name) {
        Header header = record.headers().lastWithName(name);
        return header == null || header.value() == null ? null : header.value().toString();
    }

    /** When the event was committed (the WAL's commit time; for a row read from the table, its occurred_at). */
    Instant committedAt() {
        return properties.getHeaders().get(MessageHeaders.COMMITTED_AT) instanceof Long millis
                ? Instant.ofEpochMilli(millis) : properties.getTimestamp().toInstant();
    }

    @Override
    public String toString() {
        return "event " + eventId + " (exchange " + exchange + ", routing key " + routingKey + ")";
    }
}
