package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RealServices;
import dev.outboxinbox.testing.ServiceProcess;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Several packaged inventory-service instances on one database and one virtual host, as they run
 * side by side in production, with orders published all along: two share the six partitions, one of
 * them is killed ({@code kill -9}) and the other takes its partitions over, a third joins and takes
 * its share, every instance's lock session is ended at once, and copies of earlier events are
 * republished throughout.
 *
 * <p>What is checked: every order has one outcome and its stock moved once (the inbox), and <b>the
 * events of one key were applied in the order they were published</b> (the partitions). The order
 * shows in the stock itself: the events of one key are orders of one unit of a product with a stock
 * of its own, published one after the other, so applied in order the first {@code stock} are reserved
 * and every later one rejected; applied out of order, a later one takes a unit an earlier one is then
 * refused. The keys run out of stock at different times, before the kill, between the kill and the
 * join, and after it. (A key's events are many orders here, so there is an order to
 * keep; on the wire they are what the events of one aggregate are: one {@code aggregate-id}.)
 */
class CompetingConsumersIT {

    private static final String DATABASE = "inventory_competing";
    private static final String VHOST = "inventory-competing";
    private static final int KEYS = 10;
    private static final int PER_KEY = 500;
    /**
     * Published in bursts of this many rounds (one order per key each), so that a key's orders are in
     * the queue together and, without partitions, in the hands of two instances at once.
     */
    private static final int BURST = 50;
    /** The average pace: slow enough that the kill and the join happen while orders flow. */
    private static final int PER_SECOND = 200;

    private final PostgresEndpoint pg = RealServices.postgres();
    private final List<ServiceProcess> started = new ArrayList<>();

    @AfterEach
    void stopTheInstances() throws InterruptedException {
        for (ServiceProcess instance : started) {
            instance.kill();
        }
    }

    @Test
    void eachOrderIsAppliedOnceAndEachKeyInOrderWhileInstancesDieAndJoin() throws Exception {
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        ServiceProcess a = start("a");
        ServiceProcess b = start("b");
        StringBuilder products = new StringBuilder("INSERT INTO products (sku, name, on_hand) VALUES ");
        for (int key = 0; key < KEYS; key++) {
            products.append(key == 0 ? "" : ", ").append("('").append(sku(key)).append("', 'competing', ").append(stock(key)).append(')');
        }
        InventoryInstances.shareThePartitions(pg, DATABASE, a, b, products.toString());

        Publisher publisher = new Publisher();
        CompletableFuture<Void> publishing = CompletableFuture.runAsync(publisher);

        // 1. kill -9 of one of two instances in the middle of the flow: the other takes its partitions.
        await().atMost(Duration.ofSeconds(60)).until(() -> outcomes() >= KEYS * PER_KEY / 4);
        b.kill();
        long killedAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> assertThat(partitionsOf(a)).hasSize(6));
        double takeover = (System.nanoTime() - killedAt) / 1e9;

        // 2. A third instance joins while orders flow: the six are shared out again, three each.
        ServiceProcess c = start("c").awaitReady(Duration.ofSeconds(90));
        long joinedAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
            assertThat(partitionsOf(a)).hasSize(3);
            assertThat(partitionsOf(c)).hasSize(3);
        });
        double rebalance = (System.nanoTime() - joinedAt) / 1e9;
        assertThat(publishing).as("the join happened while orders were still being published").isNotDone();

        // 3. Every instance's lock session ended at once (a database restart, an administrator): the locks go,
        // the instances read on and take their own back at the next heartbeat.
        pg.execute(DATABASE, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                + " WHERE application_name LIKE 'inbox/inventory-service/%' AND pid <> pg_backend_pid()");
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
            assertThat(locksHeld()).isEqualTo(6);
            assertThat(partitionsOf(a)).hasSize(3);
            assertThat(partitionsOf(c)).hasSize(3);
        });

        publishing.get(120, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(60)).until(() -> outcomes() == KEYS * PER_KEY);
        await().atMost(Duration.ofSeconds(30)).until(() -> messagesIn(Topology.INVENTORY_DEAD_LETTER_QUEUE) == 0
                && Topology.inventoryPartitions().stream().mapToLong(CompetingConsumersIT::messagesIn).sum() == 0);

        System.out.printf("[competing] %d orders over %d keys, %d copies republished; kill -9 → the survivor reads all six"
                + " partitions in %.1f s; a joining instance ready → three each in %.1f s%n",
                KEYS * PER_KEY, KEYS, publisher.copies, takeover, rebalance);
        assertThat(publisher.copies).isGreaterThan(100);
        assertThat(count("SELECT count(*) FROM inbox")).as("one inbox row per distinct event").isEqualTo(KEYS * PER_KEY);
        assertThat(count("SELECT count(*) FROM order_outcomes")).isEqualTo(KEYS * PER_KEY);
        for (int key = 0; key < KEYS; key++) {
            assertThat(count("SELECT reserved FROM products WHERE sku = '" + sku(key) + "'")).as("stock moved once").isEqualTo(stock(key));
            assertThat(count("SELECT coalesce(sum(quantity), 0) FROM reservations WHERE sku = '" + sku(key) + "'")).isEqualTo(stock(key));
            assertThat(reservedInPublishOrder(publisher.orders.get(key)))
                    .as("%s: the orders reserved are the first %d published, in order", sku(key), stock(key))
                    .isEqualTo(firstReserved(stock(key)));
        }
    }

    /** Publishes PER_KEY orders for each key, round after round in bursts, at PER_SECOND, and now and then an earlier one again. */
    private final class Publisher implements Runnable {

        private final Map<Integer, List<UUID>> orders = new HashMap<>();
        private final List<OrderCreated> sent = new ArrayList<>();
        private final Random random = new Random(42);
        private volatile int copies;

        @Override
        public void run() {
            try (Connection connection = RealServices.rabbitMq().connectionFactory(VHOST).newConnection("competing-publisher");
                 Channel channel = connection.createChannel()) {
                channel.confirmSelect();
                long start = System.nanoTime();
                int published = 0;
                for (int round = 0; round < PER_KEY; round++) {
                    for (int key = 0; key < KEYS; key++) {
                        OrderCreated order = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "competing",
                                List.of(new OrderCreated.Line(sku(key), 1)), Instant.now());
                        orders.computeIfAbsent(key, k -> new ArrayList<>()).add(order.orderId());
                        sent.add(order);
                        publish(channel, order, key);
                        published++;
                        if (random.nextInt(10) == 0) {
                            OrderCreated earlier = sent.get(random.nextInt(sent.size()));
                            publish(channel, earlier, keyOf(earlier));
                            copies++;
                        }
                    }
                    if ((round + 1) % BURST == 0) {
                        // One channel, confirms in order: the publish order is each partition's order.
                        channel.waitForConfirmsOrDie(10_000);
                        long due = start + (long) (published * 1e9 / PER_SECOND);
                        LockSupport.parkNanos(due - System.nanoTime());
                    }
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        private void publish(Channel channel, OrderCreated order, int key) throws Exception {
            AMQP.BasicProperties.Builder properties = Broker.propertiesOf(order);
            Map<String, Object> headers = new HashMap<>(properties.build().getHeaders());
            headers.put(MessageHeaders.AGGREGATE_ID, "key-" + key);
            channel.basicPublish(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, true, properties.headers(headers).build(),
                    EventJson.write(order).getBytes());
        }

        private int keyOf(OrderCreated order) {
            return Integer.parseInt(order.lines().get(0).sku().substring("SKU-KEY-".length()));
        }
    }

    private ServiceProcess start(String name) throws Exception {
        ServiceProcess instance = InventoryInstances.start(pg, DATABASE, VHOST, "competing-" + name);
        started.add(instance);
        return instance;
    }

    private static List<Integer> partitionsOf(ServiceProcess instance) throws Exception {
        return InventoryInstances.partitionsOf(instance);
    }

    /** For a key's orders in the order they were published: R reserved, - rejected, ? no outcome. */
    private String reservedInPublishOrder(List<UUID> orders) throws Exception {
        Map<UUID, Boolean> reserved = new HashMap<>();
        try (java.sql.Connection c = pg.connect(DATABASE); Statement sql = c.createStatement();
             ResultSet rs = sql.executeQuery("SELECT order_id, status = 'RESERVED' FROM order_outcomes")) {
            while (rs.next()) {
                reserved.put(rs.getObject(1, UUID.class), rs.getBoolean(2));
            }
        }
        StringBuilder outcomes = new StringBuilder();
        for (UUID order : orders) {
            Boolean status = reserved.get(order);
            outcomes.append(status == null ? '?' : status ? 'R' : '-');
        }
        return outcomes.toString();
    }

    private static String firstReserved(int stock) {
        return "R".repeat(stock) + "-".repeat(PER_KEY - stock);
    }

    /** Partition locks held by the instances' sessions. */
    private long locksHeld() {
        return count("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
                + " AND l.granted AND a.application_name LIKE 'inbox/inventory-service/%'");
    }

    private long outcomes() {
        return count("SELECT count(*) FROM order_outcomes");
    }

    private long count(String sql) {
        return Long.parseLong(pg.query(DATABASE, sql));
    }

    private static long messagesIn(String queue) {
        try (Connection connection = RealServices.rabbitMq().connectionFactory(VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(queue).getMessageCount();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Where a key's stock runs out: 8 % of its orders for the first key, 80 % for the last, so that keys
     * reach the point where order matters while two instances read, while one does, and after the join.
     */
    private static int stock(int key) {
        return 40 + 40 * key;
    }

    private static String sku(int key) {
        return "SKU-KEY-" + key;
    }
}
