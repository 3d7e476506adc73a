package dev.outboxinbox.testing;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.outboxinbox.events.Event;
import dev.outboxinbox.events.MessageHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Publishes an event as outbox-relay does: to its aggregate type's exchange, routed by its type, with
 * the message id, type and headers the relay sets, persistent and confirmed. What a consumer's test
 * sends it instead of the relay.
 */
public final class AsTheRelay {

    private AsTheRelay() {
    }

    /** The event, its payload as the contract writes it. */
    public static void publish(ConnectionFactory broker, Event event) throws Exception {
        publish(broker, event, event.payloadJson());
    }

    /** The event's envelope around another body (a broken one, to see it dead-lettered). */
    public static void publish(ConnectionFactory broker, Event event, String body) throws Exception {
        try (Connection connection = broker.newConnection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                    .messageId(event.eventId().toString()).type(event.eventType()).contentType(MessageHeaders.CONTENT_TYPE)
                    .headers(Map.of(MessageHeaders.SCHEMA_VERSION, event.schemaVersion(),
                            MessageHeaders.AGGREGATE_TYPE, event.aggregateType(), MessageHeaders.AGGREGATE_ID, event.aggregateId(),
                            MessageHeaders.COMMITTED_AT, System.currentTimeMillis()))
                    .deliveryMode(2).build();
            channel.basicPublish(event.aggregateType(), event.eventType(), true, properties, body.getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(10_000);
        }
    }
}
