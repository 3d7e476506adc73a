package dev.outboxinbox.inventory;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.InboxThroughput.Outgoing;
import dev.outboxinbox.testing.PostgresEndpoint;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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
 */
public final class InventoryBenchmark {

    public static void main(String[] args) throws Exception {
        InboxThroughput.benchmark("inventory_benchmark", "inventory-benchmark", "events", InventoryBenchmark::orders,
                "INSERT INTO products (sku, name, on_hand) VALUES ('BENCH', 'benchmark', 100000000)");
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
