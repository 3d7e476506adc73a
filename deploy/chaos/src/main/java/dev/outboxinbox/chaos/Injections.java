package dev.outboxinbox.chaos;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.system.Replay;
import dev.outboxinbox.system.SystemUnderTest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

/** Messages the chaos run publishes straight to the broker: poison, and copies of delivered events. */
final class Injections {

    private final SystemUnderTest system;
    private final Random random;
    private final Set<String> poison = new TreeSet<>();
    private int republished;

    Injections(SystemUnderTest system, long seed) {
        this.system = system;
        this.random = new Random(seed);
    }

    /** Every poison message id published so far: exactly these belong in the dead-letter queue. */
    Set<String> poison() {
        return poison;
    }

    int republished() {
        return republished;
    }

    /** Three kinds of poison: not JSON, JSON that breaks the schema, an unknown schema version. */
    void publishPoison() throws Exception {
        String[][] kinds = {
                {"{\"orderId\": ", "1"},
                {"{\"eventId\": \"x\", \"orderId\": 42, \"lines\": []}", "1"},
                {"{}", "99"}};
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-poison");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            for (String[] kind : kinds) {
                String id = "poison-" + Long.toHexString(random.nextLong());
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(id).type(OrderCreated.TYPE).contentType(MessageHeaders.CONTENT_TYPE).deliveryMode(2)
                        .headers(Map.of(MessageHeaders.SCHEMA_VERSION, Integer.parseInt(kind[1]))).build();
                channel.basicPublish(Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING, true, properties,
                        kind[0].getBytes(StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(10_000);
                poison.add(id);
            }
        }
    }

    /** Publishes {@code count} events from the outbox again (drawn from the newest 500), exactly as the relay published them. */
    void republish(int count) throws Exception {
        List<Replay.OutboxEvent> recent = Replay.newest(system.orders(), 500);
        if (recent.isEmpty()) {
            return;
        }
        List<Replay.OutboxEvent> chosen = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            chosen.add(recent.get(random.nextInt(recent.size())));
        }
        Replay.publish(system.broker(), chosen);
        republished += count;
    }

    /** What a mistaken deploy or a hand in the management UI does: inventory's partitions stop getting order events. */
    void unbindInventoryQueue() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-unbind");
             Channel channel = connection.createChannel()) {
            channel.exchangeUnbind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING);
        }
    }

    void bindInventoryQueue() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-bind");
             Channel channel = connection.createChannel()) {
            channel.exchangeBind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING);
        }
    }

    /** What the operator does once the binding is back: the relay sends its parked events on. */
    String republishParked(URI relay) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(relay.resolve("/parked/republish")).timeout(Duration.ofSeconds(60))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("POST /parked/republish answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
}
