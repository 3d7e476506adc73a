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
import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RealServices;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two packaged inventory-service instances on one database and virtual host, one of them lost in the
 * middle of a transaction: frozen ({@code SIGSTOP}, never woken — a node gone without closing its
 * sockets) while its batch waits on a product row that the test holds locked. The other instance must
 * take its partitions over and apply every later order within a bound, not wait for hours on the rows
 * the frozen one left locked (issue 27, item 3).
 */
class PartitionFencingIT {

    private static final String DATABASE = "inventory_fencing";
    private static final String VHOST = "inventory-fencing";
    private static final String HOT = "SKU-HOT";
    private static final int LATER = 80;
    /**
     * The bound on every later order: the lease (10 s) and the broker's heartbeat (5 s, two missed)
     * until the survivor reads the frozen one's partitions, the frozen transaction ended by
     * idle_in_transaction_session_timeout (10 s) or its lock wait by lock_timeout (5 s), and slack
     * for a shared 2-core machine.
     */
    private static final Duration BOUND = Duration.ofSeconds(Long.getLong("fencing.bound", 60));

    private final PostgresEndpoint pg = RealServices.postgres();
    private final List<ServiceProcess> started = new ArrayList<>();

    @AfterEach
    void stopTheInstances() throws Exception {
        for (ServiceProcess instance : started) {
            signal(instance, "CONT");
            instance.kill();
        }
    }

    @Test
    void anInstanceFrozenMidTransactionDoesNotStopTheOther() throws Exception {
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        ServiceProcess a = start("a");
        ServiceProcess b = start("b");
        InventoryInstances.shareThePartitions(pg, DATABASE, a, b, "INSERT INTO products (sku, name, on_hand) VALUES ('" + HOT
                + "', 'hot', 100000), ('SKU-COLD-0', 'cold', 100000), ('SKU-COLD-1', 'cold', 100000), ('SKU-COLD-2', 'cold', 100000)");

        List<UUID> earlier = new ArrayList<>();
        try (Connection broker = RealServices.rabbitMq().connectionFactory(VHOST).newConnection("fencing-publisher");
             Channel channel = broker.createChannel();
             java.sql.Connection holder = pg.connect(DATABASE)) {
            channel.confirmSelect();
            // The test holds the hot product's row; orders for it are published, one aggregate each, until
            // one lands on a partition of instance a and a's batch waits on that row.
            holder.setAutoCommit(false);
            try (Statement lock = holder.createStatement()) {
                lock.execute("SELECT * FROM products WHERE sku = '" + HOT + "' FOR UPDATE");
            }
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
                earlier.add(publish(channel, HOT));
                return waitingOnALock("a");
            });
            signal(a, "STOP");
            long frozenAt = System.nanoTime();
            holder.commit(); // a's session takes the row and its transaction stays open: the client is frozen
            System.out.printf("[fencing] instance a frozen (SIGSTOP) while its batch waited on %s; %d orders published"
                    + " before%n", HOT, earlier.size());

            List<UUID> later = new ArrayList<>();
            for (int i = 0; i < LATER; i++) {
                later.add(publish(channel, i % 2 == 0 ? HOT : "SKU-COLD-" + (i % 3)));
            }
            long publishedAt = System.nanoTime();
            List<UUID> all = new ArrayList<>(earlier);
            all.addAll(later);
            try {
                await().atMost(BOUND).pollInterval(Duration.ofMillis(250)).until(() -> outcomesOf(all) == all.size());
            } finally {
                System.out.printf("[fencing] %d of %d later orders (and %d of %d earlier) applied %.1f s after they were"
                                + " published, %.1f s after the freeze; b reads %s%n",
                        outcomesOf(later), LATER, outcomesOf(earlier), earlier.size(),
                        (System.nanoTime() - publishedAt) / 1e9, (System.nanoTime() - frozenAt) / 1e9,
                        InventoryInstances.partitionsOf(b));
            }
            assertThat(InventoryInstances.partitionsOf(b)).hasSize(6);
            assertThat(count("SELECT reserved FROM products WHERE sku = '" + HOT + "'"))
                    .as("each hot order reserved once").isEqualTo(count("SELECT count(*) FROM order_outcomes o JOIN reservations r"
                            + " USING (order_id) WHERE r.sku = '" + HOT + "'"));
            assertThat(count("SELECT count(*) FROM order_outcomes")).isEqualTo(all.size());
        }
    }

    /**
     * A graceful stop slower than the lease: instance a is stopped (SIGTERM) while its batch waits on a
     * row the test holds for 15 s. The next owner of a's partitions must not apply a later message of
     * a's partition before a applied the earlier one and acked it. The order shows in the stock: the
     * earlier order takes the one unit of SKU-ONE-i, so the later one of the same key must be rejected.
     */
    @Test
    void aGracefulStopSlowerThanTheLeaseDrainsBeforeTheNextOwnerReads() throws Exception {
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        ServiceProcess a = start("a");
        ServiceProcess b = start("b");
        StringBuilder products = new StringBuilder("INSERT INTO products (sku, name, on_hand) VALUES ");
        for (int i = 0; i < 30; i++) {
            products.append(i == 0 ? "" : ", ").append("('SKU-SLOW-").append(i).append("', 'slow', 1000), ('SKU-ONE-")
                    .append(i).append("', 'one', 1)");
        }
        InventoryInstances.shareThePartitions(pg, DATABASE, a, b, products.toString());

        try (Connection broker = RealServices.rabbitMq().connectionFactory(VHOST).newConnection("fencing-publisher");
             Channel channel = broker.createChannel()) {
            channel.confirmSelect();
            // Key after key, until one's first order lands on a partition of a: its batch waits on SKU-SLOW-i,
            // which the test holds. (One that lands on b is let through.)
            int key = -1;
            UUID earlier = null;
            java.sql.Connection holder = null;
            for (int i = 0; i < 30 && key < 0; i++) {
                holder = pg.connect(DATABASE);
                holder.setAutoCommit(false);
                try (Statement lock = holder.createStatement()) {
                    lock.execute("SELECT * FROM products WHERE sku = 'SKU-SLOW-" + i + "' FOR UPDATE");
                }
                earlier = publish(channel, "key-" + i, "SKU-SLOW-" + i, "SKU-ONE-" + i);
                await().atMost(Duration.ofSeconds(20)).until(() -> waitingOnALock("a") || waitingOnALock("b"));
                if (waitingOnALock("a")) {
                    key = i;
                } else {
                    holder.commit();
                    holder.close();
                }
            }
            assertThat(key).as("an order landed on a partition of a").isNotNegative();

            long stoppedAt = System.nanoTime();
            java.util.concurrent.CompletableFuture<Integer> stopping = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return a.stopGracefully();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            UUID later = publish(channel, "key-" + key, "SKU-ONE-" + key);
            System.out.printf("[fencing] SIGTERM to a while its batch waits on SKU-SLOW-%d, held by the test for 15 s%n", key);
            try {
                // The locks are the fence: b takes none of a's partitions while a is still applying what it had
                // (single active consumer, the broker's fence behind them, also keeps b waiting on RabbitMQ 3.x).
                await().during(Duration.ofSeconds(15)).atMost(Duration.ofSeconds(17))
                        .until(() -> statusOf(later) == null && InventoryInstances.partitionsOf(b).size() == 3);
            } finally {
                System.out.printf("[fencing] %.1f s after SIGTERM: the later order %s, b reads %s, a %s%n",
                        (System.nanoTime() - stoppedAt) / 1e9, statusOf(later), InventoryInstances.partitionsOf(b),
                        stopping.isDone() ? "stopped" : "still stopping");
                holder.commit();
                holder.close();
            }
            stopping.get(60, TimeUnit.SECONDS);
            double stopped = (System.nanoTime() - stoppedAt) / 1e9;
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> assertThat(InventoryInstances.partitionsOf(b)).hasSize(6));
            double takeover = (System.nanoTime() - stoppedAt) / 1e9;
            UUID first = earlier;
            await().atMost(Duration.ofSeconds(30)).until(() -> statusOf(first) != null && statusOf(later) != null);
            System.out.printf("[fencing] a stopped %.1f s after SIGTERM, b reads all six %.1f s after it; the earlier order"
                    + " %s, the later %s%n", stopped, takeover, statusOf(first), statusOf(later));
            assertThat(statusOf(first)).as("the earlier order of the key, applied first").isEqualTo("RESERVED");
            assertThat(statusOf(later)).as("the later one, after it: out of stock").isEqualTo("REJECTED");
        }
    }

    /**
     * Membership proves that the instance can apply: instance a's pool turns read-only (its role's
     * {@code default_transaction_read_only}, its pool's sessions ended), its lock session lives on. Its
     * batches fail like an outage; it must leave its partitions to b, which applies every order.
     */
    @Test
    void anInstanceWhoseDatabaseRefusesItsWritesLeavesItsPartitionsToTheOther() throws Exception {
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        pg.execute(DATABASE, "DROP ROLE IF EXISTS " + READ_ONLY_ROLE, "CREATE ROLE " + READ_ONLY_ROLE + " LOGIN SUPERUSER");
        ServiceProcess a = start("a", READ_ONLY_ROLE);
        ServiceProcess b = start("b");
        InventoryInstances.shareThePartitions(pg, DATABASE, a, b, "INSERT INTO products (sku, name, on_hand) VALUES ('SKU-COLD-0', 'cold', 100000)");

        // A second instance named like a running one is refused at start, with the reason.
        File twinLog = new File("target", "fencing-a-twin.log");
        java.nio.file.Files.deleteIfExists(twinLog.toPath());
        start("a", null, twinLog);
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> twinLog.exists()
                && java.nio.file.Files.readString(twinLog.toPath()).contains("inbox.partitioning.instance 'fencing-a' is taken"));
        assertThat(InventoryInstances.partitionsOf(a)).hasSize(3);

        pg.execute(DATABASE, "ALTER ROLE " + READ_ONLY_ROLE + " SET default_transaction_read_only = on",
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pool-a'");
        long brokenAt = System.nanoTime();
        List<UUID> orders = new ArrayList<>();
        try (Connection broker = RealServices.rabbitMq().connectionFactory(VHOST).newConnection("fencing-publisher");
             Channel channel = broker.createChannel()) {
            channel.confirmSelect();
            for (int i = 0; i < 60; i++) {
                orders.add(publish(channel, "SKU-COLD-0"));
            }
        }
        try {
            await().atMost(BOUND).pollInterval(Duration.ofMillis(250)).until(() -> outcomesOf(orders) == orders.size());
        } finally {
            System.out.printf("[fencing] a's pool read-only: %d of %d orders applied %.1f s after; a reads %s, b reads %s%n",
                    outcomesOf(orders), orders.size(), (System.nanoTime() - brokenAt) / 1e9,
                    InventoryInstances.partitionsOf(a), InventoryInstances.partitionsOf(b));
        }
        assertThat(InventoryInstances.partitionsOf(b)).hasSize(6);
    }

    private static final String READ_ONLY_ROLE = "inventory_fencing_read_only";

    private String statusOf(UUID order) {
        String status = pg.query(DATABASE, "SELECT status FROM order_outcomes WHERE order_id = '" + order + "'");
        return status == null || status.isEmpty() ? null : status;
    }

    private UUID publish(Channel channel, String sku) throws Exception {
        return publish(channel, null, sku);
    }

    /** An order of one unit of each sku, its aggregate id {@code key} (its own id when null). */
    private UUID publish(Channel channel, String key, String... skus) throws Exception {
        OrderCreated order = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "fencing",
                java.util.Arrays.stream(skus).map(sku -> new OrderCreated.Line(sku, 1)).toList(), Instant.now());
        AMQP.BasicProperties.Builder properties = Broker.propertiesOf(order);
        Map<String, Object> headers = new HashMap<>(properties.build().getHeaders());
        headers.put(MessageHeaders.AGGREGATE_ID, key == null ? order.orderId().toString() : key);
        channel.basicPublish(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, true, properties.headers(headers).build(),
                EventJson.write(order).getBytes());
        channel.waitForConfirmsOrDie(10_000);
        return order.orderId();
    }

    /** Whether a session of instance {@code name}'s pool waits on a row lock. */
    private boolean waitingOnALock(String name) {
        return count("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pool-" + name + "'"
                + " AND wait_event_type = 'Lock'") > 0;
    }

    private long outcomesOf(List<UUID> orders) throws Exception {
        try (java.sql.Connection c = pg.connect(DATABASE);
             java.sql.PreparedStatement query = c.prepareStatement("SELECT count(*) FROM order_outcomes WHERE order_id = ANY(?)")) {
            query.setArray(1, c.createArrayOf("uuid", orders.toArray()));
            try (ResultSet rs = query.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private ServiceProcess start(String name) throws Exception {
        return start(name, null);
    }

    private ServiceProcess start(String name, String role) throws Exception {
        return start(name, role, new File("target", "fencing-" + name + ".log"));
    }

    /** @param role the database user of the instance (null: the superuser the tests use) */
    private ServiceProcess start(String name, String role, File log) throws Exception {
        Map<String, String> environment = new HashMap<>(InboxThroughput.environment(pg, DATABASE, VHOST));
        if (role != null) {
            environment.put("QUARKUS_DATASOURCE_USERNAME", role);
        }
        environment.put("INBOX_PARTITIONING_INSTANCE", "fencing-" + name);
        // The pool's sessions named, so that the test sees which instance waits on a lock.
        environment.put("JAVA_TOOL_OPTIONS", "-Dquarkus.datasource.jdbc.additional-jdbc-properties.ApplicationName=pool-" + name);
        ServiceProcess instance = ServiceProcess.start(Path.of("target", "quarkus-app"), environment, log);
        started.add(instance);
        return instance;
    }

    private static void signal(ServiceProcess instance, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(instance.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }

    private long count(String sql) {
        return Long.parseLong(pg.query(DATABASE, sql));
    }
}
