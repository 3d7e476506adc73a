package dev.outboxinbox.benchmarks;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * outbox-relay against Debezium Server: the same outbox table (order-service's schema), the same
 * backlog, the same quorum queue, one at a time, in alternating order. Each turn of a relay:
 * <ol>
 *   <li>a fresh start: no slot, no offsets; it starts, makes its slot, relays one probe row, stops;</li>
 *   <li>cold: the backlog is committed while it is stopped (transactions of 1,000 rows), then the
 *       process starts: first message (from the process's start) and events/s (first to last message);</li>
 *   <li>warm: the same process, just through the cold drain; the backlog is committed again while it
 *       runs: first message (from the first commit) and events/s;</li>
 *   <li>it stops; its slot is dropped.</li>
 * </ol>
 * Nobody consumes the queue during a run; its depth is read every 10 ms.
 */
final class RelayPeers {

    static final String QUEUE = "bench.relay";
    private static final int ROWS_PER_TRANSACTION = 1_000;

    record Drain(double firstMessageMs, double eventsPerSecond) {
    }

    record Turn(String peer, int round, Drain cold, Drain warm, double peakRssMib) {
    }

    private final Scratch scratch;
    private final int backlog;
    private final String payload = EventJson.write(new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "bench-customer",
            List.of(new OrderCreated.Line("SKU-APPLE", 2), new OrderCreated.Line("SKU-PEAR", 1)), Instant.now()));

    RelayPeers(Scratch scratch, int backlog) {
        this.scratch = scratch;
        this.backlog = backlog;
    }

    List<Turn> measure(List<Peer> peers, int rounds) throws Exception {
        scratch.ordersSchema(Scratch.SOURCE_DB);
        scratch.pg().recreateDatabase(Scratch.OFFSETS_DB);
        scratch.pg().execute("postgres", "ALTER DATABASE " + Scratch.OFFSETS_DB + " OWNER TO " + Scratch.RELAY_ROLE);
        scratch.broker().recreateVirtualHost(Scratch.PEERS_VHOST);
        List<Turn> turns = new ArrayList<>();
        try (Connection connection = scratch.broker().connectionFactory(Scratch.PEERS_VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(OrderEvent.AGGREGATE_TYPE, BuiltinExchangeType.TOPIC, true);
            channel.queueDeclare(QUEUE, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.queueBind(QUEUE, OrderEvent.AGGREGATE_TYPE, "#");
            for (int round = 1; round <= rounds; round++) {
                List<Peer> order = new ArrayList<>(peers);
                if (round % 2 == 0) {
                    Collections.reverse(order);
                }
                for (Peer peer : order) {
                    Turn turn = turn(peer, round, channel);
                    System.out.printf("[relay] round %d, %s: cold %,.0f events/s (first message %,.0f ms after start),"
                                    + " warm %,.0f events/s (first message %,.0f ms after the first commit), RSS peak %.0f MiB%n",
                            round, peer.name(), turn.cold().eventsPerSecond(), turn.cold().firstMessageMs(),
                            turn.warm().eventsPerSecond(), turn.warm().firstMessageMs(), turn.peakRssMib());
                    turns.add(turn);
                }
            }
        }
        return turns;
    }

    private Turn turn(Peer peer, int round, Channel channel) throws Exception {
        scratch.pg().execute(Scratch.SOURCE_DB, "TRUNCATE outbox");
        dropSlot(peer.slot());
        peer.forgetOffsets();
        channel.queuePurge(QUEUE);

        // A fresh start: its slot begins here; one probe row proves it streams.
        peer.start();
        try {
            awaitSlotActive(peer);
            insert(1);
            awaitDepth(channel, 1, Duration.ofMinutes(1), peer);
        } finally {
            peer.stop();
        }
        channel.queuePurge(QUEUE);

        insert(backlog);
        long started = System.nanoTime();
        peer.start();
        Memory memory = Memory.samplingPeak(Map.of(peer.name(), peer.pid()));
        Drain cold;
        Drain warm;
        try {
            cold = drain(channel, started, peer);
            channel.queuePurge(QUEUE);
            DepthWatch watch = new DepthWatch(channel, backlog, peer);
            Thread watcher = new Thread(watch, "depth-watch");
            long firstCommit = System.nanoTime();
            watcher.start();
            insert(backlog);
            watcher.join();
            warm = watch.drain(firstCommit);
        } finally {
            memory.close();
            peer.stop();
            dropSlot(peer.slot());
        }
        return new Turn(peer.name(), round, cold, warm, memory.peakMib().getOrDefault(peer.name(), 0.0));
    }

    /** The queue's depth from the moment {@code startedNanos}: first message, and the rate from first to last. */
    private Drain drain(Channel channel, long startedNanos, Peer peer) throws Exception {
        DepthWatch watch = new DepthWatch(channel, backlog, peer);
        watch.run();
        return watch.drain(startedNanos);
    }

    /** Reads the queue's depth every 10 ms until it holds {@code expected}: when the first and the last arrived. */
    private static final class DepthWatch implements Runnable {
        private final Channel channel;
        private final int expected;
        private final Peer peer;
        private volatile long first;
        private volatile long last;
        private volatile Exception failure;

        DepthWatch(Channel channel, int expected, Peer peer) {
            this.channel = channel;
            this.expected = expected;
            this.peer = peer;
        }

        /** @param fromNanos what the first message's latency is counted from */
        Drain drain(long fromNanos) throws Exception {
            if (failure != null) {
                throw failure;
            }
            return new Drain((first - fromNanos) / 1e6, expected / ((last - first) / 1e9));
        }

        @Override
        public void run() {
            try {
                long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
                long depth;
                do {
                    depth = channel.queueDeclarePassive(QUEUE).getMessageCount();
                    long now = System.nanoTime();
                    if (first == 0 && depth > 0) {
                        first = now;
                    }
                    if (now > deadline) {
                        throw new IllegalStateException(peer.name() + " relayed " + depth + " of " + expected
                                + " events in 10 minutes (its log is in deploy/benchmarks/target)");
                    }
                    last = now;
                    if (depth < expected) {
                        LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
                    }
                } while (depth < expected);
            } catch (Exception e) {
                failure = e;
            }
        }
    }

    /** Commits {@code rows} outbox rows, in transactions of up to 1,000, as fast as PostgreSQL takes them. */
    private void insert(int rows) throws Exception {
        try (java.sql.Connection c = scratch.pg().connect(Scratch.SOURCE_DB);
             PreparedStatement insert = c.prepareStatement("""
                     INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at)
                     SELECT gen_random_uuid(), ?, gen_random_uuid()::text, ?, ?, ?::jsonb, NULL, now()
                     FROM generate_series(1, ?)""")) {
            insert.setString(1, OrderEvent.AGGREGATE_TYPE);
            insert.setString(2, OrderCreated.TYPE);
            insert.setInt(3, OrderCreated.SCHEMA_VERSION);
            insert.setString(4, payload);
            for (int done = 0; done < rows; done += ROWS_PER_TRANSACTION) {
                insert.setInt(5, Math.min(ROWS_PER_TRANSACTION, rows - done));
                insert.executeUpdate();
            }
        }
    }

    private void awaitSlotActive(Peer peer) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        try (java.sql.Connection c = scratch.pg().connect("postgres");
             PreparedStatement query = c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
            query.setString(1, peer.slot());
            while (true) {
                try (ResultSet rs = query.executeQuery()) {
                    if (rs.next() && rs.getBoolean(1)) {
                        return;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(peer.name() + " did not start streaming from slot " + peer.slot()
                            + " within 2 minutes (its log is in deploy/benchmarks/target)");
                }
                LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
            }
        }
    }

    private static void awaitDepth(Channel channel, int depth, Duration atMost, Peer peer) throws Exception {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (channel.queueDeclarePassive(QUEUE).getMessageCount() < depth) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(peer.name() + " did not relay the probe row within " + atMost.toSeconds() + " s");
            }
            LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
    }

    private void dropSlot(String slot) {
        scratch.pg().execute("postgres", "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '"
                + slot + "' AND NOT active");
    }
}
