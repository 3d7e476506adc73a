package dev.outboxinbox.testing;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import java.io.File;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * How the consumer benchmarks (InventoryBenchmark, ReplyBenchmark) measure a packaged service's
 * inbox: the messages are published while a SHARE lock on the inbox table holds every inbox insert
 * back (so they wait in the queue and the warm service takes none in), the lock is released, and
 * the time until the messages are in the inbox is measured. The service is measured alone on the
 * CPU, not racing the publisher.
 */
public final class InboxThroughput {

    /** One message to publish: where, and what. */
    public record Outgoing(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body) {
    }

    /** One measured round. */
    public record Round(double seconds, double rate, double publishRate) {
    }

    /**
     * Where a message's effect shows, and how it is held back: the table whose SHARE lock holds every
     * insert back, and the lookup and count that tell it is there.
     *
     * @param table    locked while the messages are published, and counted
     * @param lookup   SQL with one parameter, the message's key: a row if it is done
     * @param key      a message's key for {@code lookup}
     */
    public record Completion(String table, String lookup, Function<Outgoing, String> key) {

        /** The inbox row: the message id. */
        public static final Completion INBOX = new Completion("inbox", "SELECT 1 FROM inbox WHERE message_id = ?",
                message -> message.properties().getMessageId());
    }

    private final PostgresEndpoint pg;
    private final String database;
    private final Channel channel;
    private final Completion completion;

    /**
     * @param channel    a channel of the benchmark's own, in confirm mode
     * @param completion where each message's effect shows
     */
    public InboxThroughput(PostgresEndpoint pg, String database, Channel channel, Completion completion) {
        this.pg = pg;
        this.database = database;
        this.channel = channel;
        this.completion = completion;
    }

    /** The packaged service's environment: this database and virtual host on the real servers, as their superusers. */
    public static Map<String, String> environment(PostgresEndpoint pg, String database, String virtualHost) {
        RabbitMqEndpoint broker = RealServices.rabbitMq();
        return Map.of(
                "QUARKUS_DATASOURCE_JDBC_URL", pg.jdbcUrl(database),
                "QUARKUS_DATASOURCE_USERNAME", pg.user(),
                "QUARKUS_DATASOURCE_PASSWORD", pg.password(),
                "RABBITMQ_HOST", broker.host(),
                "RABBITMQ_PORT", String.valueOf(broker.port()),
                "RABBITMQ_USERNAME", broker.user(),
                "RABBITMQ_PASSWORD", broker.password(),
                "RABBITMQ_VIRTUAL_HOST", virtualHost);
    }

    /** Makes {@code count} new messages (and whatever state they need, written first to the service's database). */
    @FunctionalInterface
    public interface Messages {
        List<Outgoing> make(PostgresEndpoint pg, String database, int count) throws Exception;
    }

    /**
     * The whole benchmark of the packaged service in {@code target/quarkus-app}: a fresh database and
     * virtual host, the service started on them, {@code setupSql} run once it is ready, then
     * {@link #report} with {@code -Devents} messages (default 10,000).
     */
    public static void benchmark(String database, String virtualHost, String what, Messages messages, String... setupSql)
            throws Exception {
        int count = Integer.parseInt(System.getProperty("events", "10000"));
        PostgresEndpoint pg = RealServices.postgres();
        pg.recreateDatabase(database);
        RealServices.rabbitMq().recreateVirtualHost(virtualHost);
        ServiceProcess service = ServiceProcess.start(Path.of("target", "quarkus-app"), environment(pg, database, virtualHost),
                new File("target", database + ".log")).awaitReady(Duration.ofSeconds(60));
        try (com.rabbitmq.client.Connection connection = RealServices.rabbitMq().connectionFactory(virtualHost).newConnection();
             Channel channel = connection.createChannel()) {
            if (setupSql.length > 0) {
                pg.execute(database, setupSql);
            }
            channel.confirmSelect();
            new InboxThroughput(pg, database, channel, Completion.INBOX).report(what, messages, count);
        } finally {
            service.stopGracefully();
        }
    }

    /**
     * The benchmark: a warm-up round, a round of {@code count} distinct messages, then the same again
     * as duplicates, each printed as messages/s.
     */
    public void report(String what, Messages messages, int count) throws Exception {
        List<Outgoing> warmUp = messages.make(pg, database, count);
        System.out.printf("warm-up: %,.0f distinct messages/s%n", distinct(warmUp).rate());
        List<Outgoing> sent = messages.make(pg, database, count);
        Round distinct = distinct(sent);
        System.out.printf("distinct: %,d %s applied in %.2f s = %,.0f messages/s (published at %,.0f/s)%n",
                count, what, distinct.seconds(), distinct.rate(), distinct.publishRate());
        Round duplicates = duplicates(sent, messages.make(pg, database, 1).get(0));
        System.out.printf("duplicates: %,d redelivered %s absorbed in %.2f s = %,.0f messages/s (published at %,.0f/s)%n",
                count, what, duplicates.seconds(), duplicates.rate(), duplicates.publishRate());
    }

    /** Publishes distinct {@code messages} held back, and measures until the effect of every one of them shows. */
    public Round distinct(List<Outgoing> messages) throws Exception {
        long before = rows();
        Released released = publishHeldBack(messages);
        // An index lookup for the last message while they flow (a count would scan the table under
        // the service's feet), then the count once, to be exact.
        awaitDone(messages.get(messages.size() - 1));
        while (rows() < before + messages.size()) {
            LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        double seconds = (System.nanoTime() - released.at()) / 1e9;
        return new Round(seconds, messages.size() / seconds, released.publishRate());
    }

    /**
     * Publishes {@code duplicates} then {@code sentinel}, held back, and measures until the sentinel
     * is in the inbox: the time to absorb the duplicates in front of it.
     */
    public Round duplicates(List<Outgoing> duplicates, Outgoing sentinel) throws Exception {
        List<Outgoing> all = new ArrayList<>(duplicates);
        all.add(sentinel);
        Released released = publishHeldBack(all);
        awaitDone(sentinel);
        double seconds = (System.nanoTime() - released.at()) / 1e9;
        return new Round(seconds, duplicates.size() / seconds, released.publishRate());
    }

    private record Released(long at, double publishRate) {
    }

    private Released publishHeldBack(List<Outgoing> messages) throws Exception {
        try (Connection lock = pg.connect(database)) {
            lock.setAutoCommit(false);
            lock.createStatement().execute("LOCK TABLE " + completion.table() + " IN SHARE MODE");
            double publishRate = publish(messages, System.nanoTime());
            lock.commit();
            return new Released(System.nanoTime(), publishRate);
        }
    }

    /** Publishes with confirms in windows of 500, as the relay does. @return messages/s published */
    private double publish(List<Outgoing> messages, long start) throws Exception {
        int sinceConfirm = 0;
        for (Outgoing message : messages) {
            channel.basicPublish(message.exchange(), message.routingKey(), true, message.properties(), message.body());
            if (++sinceConfirm == 500) {
                channel.waitForConfirmsOrDie(30_000);
                sinceConfirm = 0;
            }
        }
        channel.waitForConfirmsOrDie(30_000);
        return messages.size() / ((System.nanoTime() - start) / 1e9);
    }

    /**
     * Polls every 5 ms on one connection. A connection a poll, as this once did, forked a PostgreSQL
     * backend 200 times a second (milliseconds of CPU each), taken from what it measures.
     */
    private void awaitDone(Outgoing message) throws Exception {
        String key = completion.key().apply(message);
        try (Connection c = pg.connect(database); PreparedStatement q = c.prepareStatement(completion.lookup())) {
            q.setString(1, key);
            while (true) {
                try (ResultSet rs = q.executeQuery()) {
                    if (rs.next()) {
                        return;
                    }
                }
                LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
            }
        }
    }

    private long rows() throws Exception {
        try (Connection c = pg.connect(database);
             ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM " + completion.table())) {
            rs.next();
            return rs.getLong(1);
        }
    }

}
