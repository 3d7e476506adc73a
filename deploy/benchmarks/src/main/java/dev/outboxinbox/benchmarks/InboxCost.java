package dev.outboxinbox.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.InboxThroughput.Completion;
import dev.outboxinbox.testing.InboxThroughput.Outgoing;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What exactly-once costs the consumer: inventory-service as packaged, taking the same kind of events
 * with its inbox on, and off (the chaos negative control's mode: no inbox row, no guard on the effect;
 * the profile is {@code prod,chaos} in both, so the switch is the only difference). Each round starts
 * the service, warms it with one batch of events, then measures another: the events wait in the queue
 * behind a lock on {@code order_outcomes} and are released at once ({@link InboxThroughput}); the time
 * until every order's outcome is committed gives messages/s. On and off alternate.
 */
final class InboxCost {

    record Round(int round, boolean inbox, double messagesPerSecond, double peakRssMib) {
    }

    /** An order's outcome is the effect both modes write: the lock holds it back, its row tells it is done. */
    private static final Completion OUTCOME = new Completion("order_outcomes",
            "SELECT 1 FROM order_outcomes WHERE order_id = ?::uuid", message -> orderIdOf(message));

    private final Scratch scratch;
    private final int events;
    private final File log;

    InboxCost(Scratch scratch, int events, File log) {
        this.scratch = scratch;
        this.events = events;
        this.log = log;
    }

    List<Round> measure(int rounds) throws Exception {
        List<Round> results = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            for (boolean inbox : round % 2 == 1 ? new boolean[] {true, false} : new boolean[] {false, true}) {
                Round result = round(round, inbox);
                System.out.printf("[inbox] round %d, inbox %s: %,.0f messages/s, RSS peak %.0f MiB%n",
                        round, inbox ? "on" : "off", result.messagesPerSecond(), result.peakRssMib());
                results.add(result);
            }
        }
        return results;
    }

    private Round round(int round, boolean inbox) throws Exception {
        scratch.pg().recreateDatabase(Scratch.INBOX_DB);
        scratch.broker().recreateVirtualHost(Scratch.INBOX_VHOST);
        Map<String, String> environment = new HashMap<>(InboxThroughput.environment(scratch.pg(), Scratch.INBOX_DB, Scratch.INBOX_VHOST));
        // The profile DeduplicationGuard requires for the switch; the same in both modes.
        environment.put("QUARKUS_PROFILE", "prod,chaos");
        environment.put("INVENTORY_UNSAFE_DISABLE_DEDUPLICATION", String.valueOf(!inbox));
        ServiceProcess service = ServiceProcess.start(scratch.root().resolve("inventory-service/target/quarkus-app"), environment, log)
                .awaitReady(Duration.ofSeconds(90));
        Memory memory = Memory.samplingPeak(Map.of("inventory-service", service.pid()));
        double rate;
        try (Connection connection = scratch.broker().connectionFactory(Scratch.INBOX_VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            scratch.pg().execute(Scratch.INBOX_DB, "INSERT INTO products (sku, name, on_hand) VALUES ('BENCH', 'benchmark', 100000000)");
            channel.confirmSelect();
            InboxThroughput throughput = new InboxThroughput(scratch.pg(), Scratch.INBOX_DB, channel, OUTCOME);
            throughput.distinct(orders(events));
            rate = throughput.distinct(orders(events)).rate();
        } finally {
            memory.close();
            service.stopGracefully();
        }
        return new Round(round, inbox, rate, memory.peakMib().getOrDefault("inventory-service", 0.0));
    }

    private static List<Outgoing> orders(int count) {
        List<Outgoing> orders = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            OrderCreated event = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "bench",
                    List.of(new OrderCreated.Line("BENCH", 1)), Instant.now());
            Map<String, Object> headers = new HashMap<>();
            headers.put(MessageHeaders.SCHEMA_VERSION, OrderCreated.SCHEMA_VERSION);
            headers.put(MessageHeaders.AGGREGATE_TYPE, OrderEvent.AGGREGATE_TYPE);
            headers.put(MessageHeaders.AGGREGATE_ID, event.orderId().toString());
            headers.put(MessageHeaders.COMMITTED_AT, System.currentTimeMillis());
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                    .messageId(event.eventId().toString()).type(OrderCreated.TYPE)
                    .contentType("application/json").deliveryMode(2).headers(headers).build();
            orders.add(new Outgoing(OrderEvent.AGGREGATE_TYPE, OrderCreated.TYPE, properties, EventJson.write(event).getBytes()));
        }
        return orders;
    }

    private static String orderIdOf(Outgoing message) {
        return (String) message.properties().getHeaders().get(MessageHeaders.AGGREGATE_ID);
    }
}
