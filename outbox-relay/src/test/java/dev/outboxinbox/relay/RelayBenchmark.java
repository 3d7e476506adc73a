package dev.outboxinbox.relay;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.testing.ServiceProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * Measures the packaged relay on the real PostgreSQL and RabbitMQ and prints the numbers
 * (run it with {@code deploy/benchmarks/relay}):
 * <ol>
 *   <li>drain: after a warm-up, a backlog of N outbox rows committed at once; events/s from the
 *       first to the last of them in the queue, median of several runs;</li>
 *   <li>latency: events written at a moderate rate; commit-to-delivery time of each (payload
 *       {@code occurredAt}, which is the producer's transaction time, to arrival at a consumer).</li>
 * </ol>
 * Not a test: it asserts nothing and is not run by the build.
 */
public final class RelayBenchmark {

    public static void main(String[] args) throws Exception {
        int backlog = Integer.parseInt(System.getProperty("backlog", "10000"));
        int rate = Integer.parseInt(System.getProperty("rate", "500"));
        int seconds = Integer.parseInt(System.getProperty("seconds", "10"));
        int runs = Integer.parseInt(System.getProperty("runs", "5"));
        Map<String, String> config = RelayFixture.prepare();
        QueueProbe.bindOrders("bench.drain");
        ServiceProcess relay = RelayProcess.start(config, "relay-benchmark.log");
        relay.awaitReady(Duration.ofSeconds(60));

        try (Connection connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            // A relay runs for days: measure it warm. The warm-up is reported too, for honesty.
            int warmUp = Integer.parseInt(System.getProperty("warmup", "100000"));
            System.out.printf("warm-up (cold JIT): %,.0f events/s for %,d events in transactions of 1,000%n",
                    drain(channel, warmUp, warmUp / 1000), warmUp);
            List<Double> rates = new ArrayList<>();
            for (int run = 1; run <= runs; run++) {
                double rate1 = drain(channel, backlog, 1);
                rates.add(rate1);
                System.out.printf("drain run %d: backlog of %,d rows committed at once: %,.0f events/s%n", run, backlog, rate1);
            }
            System.out.printf("drain: median %,.0f events/s over %d runs (first to last message in the queue)%n",
                    rates.stream().sorted().toList().get(rates.size() / 2), runs);
            channel.queueDelete("bench.drain");

            List<Long> latenciesMicros = Collections.synchronizedList(new ArrayList<>());
            channel.queueDeclare("bench.latency", true, false, false, Map.of("x-queue-type", "quorum"));
            channel.queueBind("bench.latency", "orders", "#");
            channel.basicConsume("bench.latency", true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws java.io.IOException {
                    Instant occurred = EventJson.read(body, OrderCreated.class).occurredAt();
                    latenciesMicros.add(Duration.between(occurred, Instant.now()).toNanos() / 1000);
                }
            });
            int total = rate * seconds;
            long interval = 1_000_000_000L / rate;
            long start = System.nanoTime();
            for (int i = 0; i < total; i++) {
                LockSupport.parkNanos(start + i * interval - System.nanoTime());
                RelayFixture.insertOrderCreated(1, null);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (latenciesMicros.size() < total && System.nanoTime() < deadline) {
                LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
            }
            List<Long> sorted;
            synchronized (latenciesMicros) {
                sorted = latenciesMicros.stream().sorted().toList();
            }
            System.out.printf("latency at %d events/s for %d s (%,d of %,d received), commit to consumer: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms%n",
                    rate, seconds, sorted.size(), total, pct(sorted, 50), pct(sorted, 95), pct(sorted, 99), sorted.get(sorted.size() - 1) / 1000.0);
        } finally {
            relay.stopGracefully();
        }
    }

    /**
     * Commits {@code events} outbox rows in {@code transactions} transactions at once and times the
     * relay from the first to the last of them arriving in the (empty) queue.
     */
    private static double drain(Channel channel, int events, int transactions) throws Exception {
        channel.queuePurge("bench.drain");
        try (java.sql.Connection c = RelayFixture.postgres().connect(RelayFixture.SOURCE_DB)) {
            c.setAutoCommit(false);
            for (int t = 0; t < transactions; t++) {
                RelayFixture.insertOrderCreated(c, events / transactions);
            }
            c.commit();
        }
        long first = 0;
        long count;
        do {
            count = channel.queueDeclarePassive("bench.drain").getMessageCount();
            if (first == 0 && count > 0) {
                first = System.nanoTime();
            }
            LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
        } while (count < events);
        return events / ((System.nanoTime() - first) / 1e9);
    }

    private static double pct(List<Long> sorted, int percentile) {
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(percentile / 100.0 * sorted.size()) - 1)) / 1000.0;
    }
}
