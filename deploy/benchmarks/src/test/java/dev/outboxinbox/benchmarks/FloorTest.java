package dev.outboxinbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FloorTest {

    private static final Scratch SCRATCH = new Scratch(Path.of("../..").toAbsolutePath().normalize());

    /** Only its own database: a benchmark run on this machine may be using the other bench_* ones. */
    @AfterAll
    static void cleanUp() {
        SCRATCH.drop(Scratch.FLOOR_DB);
        SCRATCH.dropRelayRoleIfUnused();
    }

    @Test
    void readsTheOrderScriptsRateFromPgbench() {
        String output = """
                number of transactions actually processed: 14000
                latency average = 21.020 ms
                tps = 1400.500000 (without initial connection time)
                SQL script 1: /work/target/order.pgbench
                 - weight: 10 (targets 71.4% of total)
                 - 10012 transactions (71.5% of total, tps = 1001.200000)
                 - number of failed transactions: 0 (0.000%)
                SQL script 2: /work/target/inventory.pgbench
                 - weight: 1 (targets 7.1% of total)
                 - 998 transactions (7.1% of total, tps = 99.800000)
                """;
        Floor.Result result = Floor.parse(output, 32, 10, 10);
        assertThat(result.ordersPerSecond()).isEqualTo(1001.2);
        assertThat(result.tps()).isEqualTo(1400.5);
        assertThat(result.orders()).isEqualTo(10012);
        assertThatThrownBy(() -> Floor.parse("tps = 5.0 (without initial connection time)", 32, 10, 10))
                .hasMessageContaining("order.pgbench");
    }

    /**
     * Every part of the pipeline's database work happens on the real server: orders placed with their
     * lines, keys and events; inventory's outcomes, reservations and replies; the replies deciding orders;
     * both relays' offsets rewritten; both outboxes decoded from the WAL (each slot moved on).
     */
    @Test
    void pgbenchDoesThePipelinesDatabaseWorkWhileBothOutboxesAreDecoded(@TempDir Path workDir) throws Exception {
        Floor.Result result = Floor.measure(SCRATCH, workDir, 4, 3, 5);
        assertThat(result.ordersPerSecond()).isPositive();
        assertThat(result.reservedShare()).as("the orders inventory's script got to").isGreaterThan(0.5);
        assertThat(result.decidedShare()).as("the orders the replies' script decided").isGreaterThan(0.5);
        assertThat(result.decodedMib()).as("the WAL both decoders confirmed since their slots were made").isPositive();
        try (Connection c = SCRATCH.pg().connect(Scratch.FLOOR_DB);
             ResultSet rs = c.createStatement().executeQuery("""
                     SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM order_lines), (SELECT count(*) FROM idempotency_keys),
                            (SELECT count(*) FROM outbox), (SELECT count(*) FROM inventory.order_outcomes),
                            (SELECT count(*) FROM inventory.reservations), (SELECT count(*) FROM inventory.outbox),
                            (SELECT count(*) FROM orders WHERE status = 'CONFIRMED'), (SELECT count(*) FROM inbox),
                            (SELECT count(*) FROM relay.outbox_relay_offsets) + (SELECT count(*) FROM relay.outbox_relay_inventory_offsets),
                            (SELECT count(*) FROM pg_replication_slots WHERE database = current_database())""")) {
            rs.next();
            long orders = rs.getLong(1);
            assertThat(orders).isEqualTo(result.orders());
            assertThat(rs.getLong(2)).as("two lines an order").isEqualTo(2 * orders);
            assertThat(rs.getLong(3)).as("a key an order").isEqualTo(orders);
            assertThat(rs.getLong(4)).as("an event an order").isEqualTo(orders);
            assertThat(rs.getLong(5)).as("inventory decided orders").isPositive();
            assertThat(rs.getLong(6)).as("two reservations an outcome").isEqualTo(2 * rs.getLong(5));
            assertThat(rs.getLong(7)).as("inventory's replies").isPositive();
            assertThat(rs.getLong(8)).as("orders the replies decided").isPositive();
            assertThat(rs.getLong(9)).as("the replies' inbox").isPositive();
            assertThat(rs.getLong(10)).as("each relay keeps one offset row").isEqualTo(2);
            assertThat(rs.getLong(11)).as("the slots go with the run").isZero();
        }
    }
}
