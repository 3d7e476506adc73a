package dev.outboxinbox.chaos;

import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.system.SystemUnderTest;
import dev.outboxinbox.system.Verifier;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/**
 * The reply round trip, measured on a running system (deploy/local): orders through HTTP at a
 * moderate rate, and for each the time from order-service's commit ({@code placed_at}) to
 * order-service learning inventory's decision ({@code decided_at}): WAL → relay → RabbitMQ →
 * inventory's inbox and outbox → WAL → second relay → RabbitMQ → order-service's inbox. Started by
 * deploy/benchmarks/round-trip; prints p50/p95/p99 and the maximum. A warm-up load goes first and is
 * not counted: on JVMs just started, the first seconds' round trips take up to 2.6 s (seen here).
 */
public final class RoundTrip {

    private RoundTrip() {
    }

    public static void main(String[] args) throws Exception {
        int orders = Integer.parseInt(System.getProperty("orders", "1200"));
        double rate = Double.parseDouble(System.getProperty("rate", "20"));
        int warmup = Integer.parseInt(System.getProperty("warmup", "400"));
        SystemUnderTest system = ChaosRun.system();
        Verifier verifier = new Verifier(system);

        if (warmup > 0) {
            System.out.printf("warm-up: %d orders at %.0f/s, not counted%n", warmup, rate);
            new OrderLoad(system.orderService(), "round-trip-warmup-" + System.currentTimeMillis(), 3, 3).run(warmup, rate, progress -> { });
        }
        System.out.printf("placing %d orders at %.0f/s through %s%n", orders, rate, system.orderService());
        List<OrderLoad.Request> placed = new OrderLoad(system.orderService(), "round-trip-" + System.currentTimeMillis(), 7, 3)
                .run(orders, rate, progress -> { });
        List<UUID> ids = placed.stream().filter(r -> r.result() == OrderLoad.Result.OK).map(OrderLoad.Request::orderId).toList();
        Verifier.Settling settling = verifier.awaitConvergence(verifier.walPosition(), 0, Duration.ofMinutes(3), System.out::println);
        if (settling.settledMillis() < 0) {
            throw new IllegalStateException("the system did not converge: no round trip to report");
        }
        try (var c = system.orders().connect(); PreparedStatement query = c.prepareStatement("""
                SELECT count(*), percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ms), max(ms)
                FROM (SELECT extract(epoch FROM decided_at - placed_at) * 1000 AS ms FROM orders
                      WHERE id = ANY(?) AND status <> 'PENDING') AS t""")) {
            Array array = c.createArrayOf("uuid", ids.toArray());
            query.setArray(1, array);
            try (ResultSet rs = query.executeQuery()) {
                rs.next();
                Double[] p = (Double[]) rs.getArray(2).getArray();
                System.out.printf("round trip, POST committed → order CONFIRMED/REJECTED in order-service, %d of %d orders at %.0f/s:"
                        + " p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms%n",
                        rs.getLong(1), ids.size(), rate, p[0], p[1], p[2], rs.getDouble(3));
            }
        }
    }
}
