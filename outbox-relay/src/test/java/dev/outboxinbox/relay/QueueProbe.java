package dev.outboxinbox.relay;

import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Topology;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

/**
 * A durable quorum queue bound like a consumer's, drained with basic.get on a fresh connection
 * each time, so it keeps working across broker restarts. Remembers every delivery, duplicates too.
 */
final class QueueProbe {

    private final String queue;
    private final List<GetResponse> received = Collections.synchronizedList(new ArrayList<>());

    private QueueProbe(String queue) {
        this.queue = queue;
    }

    static QueueProbe bind(String queue, String exchange, String routingKey) throws Exception {
        try (Connection connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
            channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.queuePurge(queue);
            channel.queueBind(queue, exchange, routingKey);
        }
        return new QueueProbe(queue);
    }

    static QueueProbe bindOrders(String queue) throws Exception {
        return bind(queue, Topology.ORDERS_EXCHANGE, "#");
    }

    /** At most this many per call, so that a caller waiting for a count is not held while the stream flows. */
    private static final int MAX_PER_DRAIN = 500;

    /** Takes what is in the queue now (up to a few hundred); tolerates a broker that is down (returns what it had). */
    List<GetResponse> drain() {
        try (Connection connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            GetResponse response;
            int taken = 0;
            while (taken++ < MAX_PER_DRAIN && (response = channel.basicGet(queue, true)) != null) {
                received.add(response);
            }
        } catch (Exception brokerDown) {
            // The broker is being restarted by the test; the next drain picks up the rest.
        }
        return received;
    }

    /** Everything that reached the queue so far: taken plus still waiting. Cheap, no message is moved. */
    long arrived() {
        try (Connection connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            return received.size() + channel.queueDeclarePassive(queue).getMessageCount();
        } catch (Exception brokerDown) {
            return received.size();
        }
    }

    List<String> messageIds() {
        synchronized (received) {
            return received.stream().map(r -> r.getProps().getMessageId()).toList();
        }
    }

    /** Deliveries per message id, for the duplicate count. */
    Map<String, Integer> deliveriesById() {
        Map<String, Integer> counts = new HashMap<>();
        messageIds().forEach(id -> counts.merge(id, 1, Integer::sum));
        return counts;
    }

    /** Takes everything that reached the queue so far (until a drain brings nothing new); returns how many in all. */
    int drainAll() {
        int size;
        do {
            size = messageIds().size();
        } while (drain().size() > size);
        return size;
    }

    /**
     * Waits until every expected id has arrived, then two quiet seconds, so that a late copy is counted too.
     * Each look takes all that is there: a writer on a fast machine outruns a few hundred a look.
     */
    void awaitAll(List<String> expected) {
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(250)).until(() -> {
            drainAll();
            return new HashSet<>(messageIds()).containsAll(expected);
        });
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10)).until(() -> {
            int before = messageIds().size();
            return drain().size() == before;
        });
    }
}
