package dev.outboxinbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CeilingTest {

    private static final Scratch SCRATCH = new Scratch(Path.of("../..").toAbsolutePath().normalize());

    /** Only its own database: a benchmark run on this machine may be using the other bench_* ones. */
    @AfterAll
    static void cleanUp() {
        SCRATCH.drop(Scratch.CEILING_DB);
        SCRATCH.dropRelayRoleIfUnused();
    }

    @Test
    void readsPgbenchsFigures() {
        String output = """
                transaction type: place-order.pgbench
                scaling factor: 1
                query mode: prepared
                number of clients: 32
                number of threads: 2
                duration: 30 s
                number of transactions actually processed: 45678
                number of failed transactions: 0 (0.000%)
                latency average = 21.020 ms
                initial connection time = 40.311 ms
                tps = 1522.384123 (without initial connection time)
                """;
        Ceiling.Result result = Ceiling.parse(output, 32, 30);
        assertThat(result.tps()).isEqualTo(1522.384123);
        assertThat(result.latencyMs()).isEqualTo(21.020);
        assertThat(result.transactions()).isEqualTo(45678);
        assertThatThrownBy(() -> Ceiling.parse("pgbench: error: connection refused", 32, 30))
                .hasMessageContaining("tps =").hasMessageContaining("connection refused");
    }

    /** The script does what order-service's transaction does: per order its key, the order, 1–3 lines and its event. */
    @Test
    void pgbenchWritesOrdersAsOrderServiceDoes(@TempDir Path workDir) throws Exception {
        Ceiling.Result result = Ceiling.measure(SCRATCH, workDir, 2, 2);
        assertThat(result.tps()).isPositive();
        try (Connection c = SCRATCH.pg().connect(Scratch.CEILING_DB);
             ResultSet rs = c.createStatement().executeQuery("""
                     SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox), (SELECT count(*) FROM idempotency_keys),
                            (SELECT count(*) FROM order_lines), (SELECT min(n) FROM (SELECT count(*) AS n FROM order_lines GROUP BY order_id) l),
                            (SELECT max(n) FROM (SELECT count(*) AS n FROM order_lines GROUP BY order_id) l),
                            (SELECT count(*) FROM outbox o JOIN orders ON orders.id::text = o.aggregateid),
                            (SELECT payload::text FROM outbox LIMIT 1)""")) {
            rs.next();
            long orders = rs.getLong(1);
            assertThat(orders).isEqualTo(result.transactions()).isPositive();
            assertThat(rs.getLong(2)).as("one event per order").isEqualTo(orders);
            assertThat(rs.getLong(3)).as("one Idempotency-Key per order").isEqualTo(orders);
            assertThat(rs.getLong(4)).isBetween(orders, 3 * orders);
            assertThat(rs.getInt(5)).isEqualTo(1);
            assertThat(rs.getInt(6)).isLessThanOrEqualTo(3);
            assertThat(rs.getLong(7)).as("each event names its order").isEqualTo(orders);
            assertThat(EventJson.read(rs.getString(8).getBytes(), OrderCreated.class).lines()).hasSize(2);
        }
    }
}
