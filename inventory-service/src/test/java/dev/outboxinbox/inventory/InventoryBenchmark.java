package dev.outboxinbox.inventory;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RealServices;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * Measures the packaged inventory-service on the real PostgreSQL and RabbitMQ and prints messages/s
 * (run it with {@code deploy/benchmarks/inventory}):
 * <ol>
 *   <li>distinct: N new events wait in the queue (the benchmark holds a SHARE lock on the inbox
 *       table while it publishes them, so the warm service can take none in); the lock is released
 *       and the time until the N-th inbox row is committed is measured;</li>
 *   <li>duplicates: the same N events again, held back the same way; the time until a sentinel
 *       event published after them is committed.</li>
 * </ol>
 * A warm-up round runs first, so the service is measured warm and alone on the CPU, not racing
 * the publisher. Not a test: it asserts nothing and the build does not run it.
 */
public final class InventoryBenchmark {

    private static final String DATABASE = "inventory_benchmark";
    private static final String VHOST = "inventory-benchmark";

    public static void main(String[] args) throws Exception {
        int events = Integer.parseInt(System.getProperty("events", "10000"));
        PostgresEndpoint pg = RealServices.postgres();
        pg.recreateDatabase(DATABASE);
        RealServices.rabbitMq().recreateVirtualHost(VHOST);
        Map<String, String> env = Map.of(
                "QUARKUS_DATASOURCE_JDBC_URL", pg.jdbcUrl(DATABASE),
                "QUARKUS_DATASOURCE_USERNAME", pg.user(),
                "QUARKUS_DATASOURCE_PASSWORD", pg.password(),
                "RABBITMQ_HOST", RealServices.rabbitMq().host(),
                "RABBITMQ_PORT", String.valueOf(RealServices.rabbitMq().port()),
                "RABBITMQ_USERNAME", RealServices.rabbitMq().user(),
                "RABBITMQ_PASSWORD", RealServices.rabbitMq().password(),
                "RABBITMQ_VIRTUAL_HOST", VHOST);
        ServiceProcess service = ServiceProcess.start(Path.of("target", "quarkus-app"), env, new File("target", "inventory-benchmark.log"))
                .awaitReady(Duration.ofSeconds(60));
        pg.execute(DATABASE, "INSERT INTO products (sku, name, on_hand) VALUES ('BENCH', 'benchmark', 100000000)");
        try (Connection connection = RealServices.rabbitMq().connectionFactory(VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            System.out.printf("warm-up: %,.0f distinct messages/s%n", distinct(channel, pg, events).rate);
            Round distinct = distinct(channel, pg, events);
            System.out.printf("distinct: %,d events applied in %.2f s = %,.0f messages/s (published at %,.0f/s)%n",
                    events, distinct.seconds, distinct.rate, distinct.publishRate);
            Round duplicates = duplicates(channel, pg, distinct.sent);
            System.out.printf("duplicates: %,d redelivered events absorbed in %.2f s = %,.0f messages/s (published at %,.0f/s)%n",
                    events, duplicates.seconds, duplicates.rate, duplicates.publishRate);
        } finally {
            service.stopGracefully();
        }
    }

    private record Round(List<OrderCreated> sent, double seconds, double rate, double publishRate) {
    }

    private static Round distinct(Channel channel, PostgresEndpoint pg, int events) throws Exception {
        List<OrderCreated> batch = new ArrayList<>(events);
        for (int i = 0; i < events; i++) {
            batch.add(new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "bench",
                    List.of(new OrderCreated.Line("BENCH", 1)), Instant.now()));
        }
        long before = inboxRows(pg);
        Released released = publishHeldBack(channel, pg, batch);
        long start = released.at();
        double publishRate = released.publishRate();
        // An index lookup for the last event while it flows (a count would scan the table under the
        // service's feet), then the count once, to be exact.
        while (!applied(pg, batch.get(batch.size() - 1))) {
            LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        while (inboxRows(pg) < before + events) {
            LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Round(batch, seconds, events / seconds, publishRate);
    }

    private static Round duplicates(Channel channel, PostgresEndpoint pg, List<OrderCreated> alreadyApplied) throws Exception {
        OrderCreated sentinel = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "sentinel",
                List.of(new OrderCreated.Line("BENCH", 1)), Instant.now());
        List<OrderCreated> again = new ArrayList<>(alreadyApplied);
        again.add(sentinel);
        Released released = publishHeldBack(channel, pg, again);
        long start = released.at();
        double publishRate = released.publishRate();
        while (!applied(pg, sentinel)) {
            LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Round(again, seconds, alreadyApplied.size() / seconds, publishRate);
    }

    /** Publishes with confirms in windows of 500, as the relay does. @return messages/s published */
    private static double publish(Channel channel, List<OrderCreated> events, long start) throws Exception {
        int sinceConfirm = 0;
        for (OrderCreated event : events) {
            AMQP.BasicProperties props = Broker.propertiesOf(event).build();
            channel.basicPublish(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, true, props, EventJson.write(event).getBytes());
            if (++sinceConfirm == 500) {
                channel.waitForConfirmsOrDie(30_000);
                sinceConfirm = 0;
            }
        }
        channel.waitForConfirmsOrDie(30_000);
        return events.size() / ((System.nanoTime() - start) / 1e9);
    }

    private record Released(long at, double publishRate) {
    }

    /**
     * Publishes the events while a SHARE lock on the inbox table blocks every inbox insert, so they
     * wait in the queue (the warm service takes none in), then releases the lock.
     * @return when the lock was released, and how fast the events were published
     */
    private static Released publishHeldBack(Channel channel, PostgresEndpoint pg, List<OrderCreated> events) throws Exception {
        try (java.sql.Connection lock = pg.connect(DATABASE)) {
            lock.setAutoCommit(false);
            lock.createStatement().execute("LOCK TABLE inbox IN SHARE MODE");
            double publishRate = publish(channel, events, System.nanoTime());
            lock.commit();
            return new Released(System.nanoTime(), publishRate);
        }
    }

    private static long inboxRows(PostgresEndpoint pg) throws Exception {
        try (var c = pg.connect(DATABASE); ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM inbox")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static boolean applied(PostgresEndpoint pg, OrderCreated event) throws Exception {
        try (var c = pg.connect(DATABASE); var q = c.prepareStatement("SELECT 1 FROM inbox WHERE message_id = ?")) {
            q.setString(1, event.eventId().toString());
            try (ResultSet rs = q.executeQuery()) {
                return rs.next();
            }
        }
    }
}
