package dev.outboxinbox.inventory;

import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.InboxThroughput.Outgoing;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RealServices;
import dev.outboxinbox.testing.ServiceProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Measures the packaged inventory-service (group commit: {@code BatchEffects}) on the real PostgreSQL
 * and RabbitMQ and prints messages/s (run it with {@code deploy/benchmarks/inventory}):
 * <ol>
 *   <li>distinct: N new events held in the queue ({@link InboxThroughput}), then released; the time
 *       until the N-th inbox row is committed;</li>
 *   <li>duplicates: the same N events again, held back the same way; the time until a sentinel
 *       event published after them is committed.</li>
 * </ol>
 * A warm-up round runs first. Not a test: it asserts nothing and the build does not run it.
 *
 * <p>With {@code -Dinstances=1,2,3}: competing instances instead. For each count, in that order and
 * then back, that many packaged instances on one fresh database and virtual host; once they have
 * shared the six partitions out, a warm-up round and {@code -Drounds} (default 3) rounds of distinct
 * events; the median of each count's rounds, and its ratio to one instance's.
 */
public final class InventoryBenchmark {

    private static final String DATABASE = "inventory_benchmark";
    private static final String VHOST = "inventory-benchmark";
    private static final String PRODUCT = "INSERT INTO products (sku, name, on_hand) VALUES ('BENCH', 'benchmark', 100000000)";

    public static void main(String[] args) throws Exception {
        String instances = System.getProperty("instances");
        if (instances == null) {
            InboxThroughput.benchmark(DATABASE, VHOST, "events", InventoryBenchmark::orders, PRODUCT);
            return;
        }
        List<Integer> counts = Arrays.stream(instances.split(",")).map(String::trim).map(Integer::valueOf).toList();
        List<Integer> sequence = new ArrayList<>(counts);
        List<Integer> back = new ArrayList<>(counts);
        Collections.reverse(back);
        sequence.addAll(back);
        int events = Integer.parseInt(System.getProperty("events", "10000"));
        int rounds = Integer.parseInt(System.getProperty("rounds", "3"));
        Map<Integer, List<Double>> rates = new TreeMap<>();
        for (int count : sequence) {
            rates.computeIfAbsent(count, c -> new ArrayList<>()).addAll(competing(count, events, rounds));
        }
        double one = median(rates.getOrDefault(1, List.of(Double.NaN)));
        System.out.printf("%ncompeting instances, %,d distinct events per round, median of %d rounds in each of 2 passes:%n",
                events, rounds);
        rates.forEach((count, measured) -> System.out.printf("  %d instance%s: %,.0f messages/s (%.2f× one instance's)%n",
                count, count == 1 ? "" : "s", median(measured), median(measured) / one));
    }

    /** {@code count} instances share the partitions out, then {@code rounds} measured rounds after a warm-up. */
    private static List<Double> competing(int count, int events, int rounds) throws Exception {
        PostgresEndpoint pg = RealServices.postgres();
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        List<ServiceProcess> instances = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                instances.add(InventoryInstances.start(pg, DATABASE, VHOST, "benchmark-" + i));
            }
            for (ServiceProcess instance : instances) {
                instance.awaitReady(Duration.ofSeconds(120));
            }
            pg.execute(DATABASE, PRODUCT);
            int each = Topology.INVENTORY_PARTITIONS / count;
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions()
                    .until(() -> instances.stream().allMatch(i -> partitions(i) >= each));
            try (Connection connection = RealServices.rabbitMq()
                    .connectionFactory(VHOST).newConnection();
                 Channel channel = connection.createChannel()) {
                channel.confirmSelect();
                InboxThroughput throughput = new InboxThroughput(pg, DATABASE, channel, InboxThroughput.Completion.INBOX);
                throughput.distinct(orders(pg, DATABASE, events));
                List<Double> measured = new ArrayList<>();
                for (int round = 1; round <= rounds; round++) {
                    double rate = throughput.distinct(orders(pg, DATABASE, events)).rate();
                    System.out.printf("[competing] %d instance%s, round %d: %,.0f messages/s%n", count, count == 1 ? "" : "s",
                            round, rate);
                    measured.add(rate);
                }
                return measured;
            }
        } finally {
            for (ServiceProcess instance : instances) {
                instance.stopGracefully();
            }
        }
    }

    private static int partitions(ServiceProcess instance) {
        try {
            return InventoryInstances.partitionsOf(instance).size();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static List<Outgoing> orders(PostgresEndpoint pg, String database, int count) {
        List<Outgoing> orders = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            OrderCreated event = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "bench",
                    List.of(new OrderCreated.Line("BENCH", 1)), Instant.now());
            orders.add(new Outgoing(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, Broker.propertiesOf(event).build(),
                    EventJson.write(event).getBytes()));
        }
        return orders;
    }
}
