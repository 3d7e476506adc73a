package dev.outboxinbox.inventory;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Event;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.RealServices;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Publishes to the orders exchange as the relay does, and reads the dead-letter queue, with the plain RabbitMQ client. */
final class Broker {

    private Broker() {
    }

    static OrderCreated order(String sku, int quantity) {
        return new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-1",
                List.of(new OrderCreated.Line(sku, quantity)), Instant.now());
    }

    static OrderCancelled cancellation(OrderCreated order) {
        return new OrderCancelled(UUID.randomUUID(), order.orderId(), Instant.now());
    }

    static AMQP.BasicProperties.Builder propertiesOf(Event event) {
        Map<String, Object> headers = new HashMap<>();
        headers.put(MessageHeaders.SCHEMA_VERSION, event.schemaVersion());
        headers.put(MessageHeaders.AGGREGATE_TYPE, "orders");
        headers.put(MessageHeaders.AGGREGATE_ID, event.aggregateId());
        headers.put(MessageHeaders.COMMITTED_AT, System.currentTimeMillis());
        return new AMQP.BasicProperties.Builder()
                .messageId(event.eventId().toString()).type(event.eventType())
                .contentType("application/json").deliveryMode(2).headers(headers);
    }

    /** As the relay publishes an order's event: routing key its type, partition key (aggregate-id) the order's id. */
    static void publish(Event event) {
        publish(Topology.ORDERS_EXCHANGE, event.eventType(), propertiesOf(event).build(), EventJson.write(event).getBytes());
    }

    static void publish(AMQP.BasicProperties properties, byte[] body) {
        publish(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, properties, body);
    }

    static void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body) {
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            channel.basicPublish(exchange, routingKey, true, properties, body);
            channel.waitForConfirmsOrDie(Duration.ofSeconds(10).toMillis());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Takes every message now in the dead-letter queue. */
    static List<GetResponse> takeDeadLetters() {
        List<GetResponse> taken = new ArrayList<>();
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            GetResponse response;
            while ((response = channel.basicGet(Topology.INVENTORY_DEAD_LETTER_QUEUE, true)) != null) {
                taken.add(response);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return taken;
    }

    /** Ready in any of inventory's partitions. */
    static long messagesWaitingForInventory() {
        return Topology.inventoryPartitions().stream().mapToLong(Broker::messagesIn).sum();
    }

    static long messagesIn(String queue) {
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(queue).getMessageCount();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Connection connection() throws Exception {
        return RealServices.rabbitMq().connectionFactory(InventoryTestResource.VHOST).newConnection();
    }
}
