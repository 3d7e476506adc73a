package dev.outboxinbox.benchmarks;

import dev.outboxinbox.chaos.ChaosRun;
import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.system.PipelineFigures;
import dev.outboxinbox.system.SystemUnderTest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The latency run of {@link Pipeline}, alone ({@code deploy/benchmarks/latency}): deploy/local reset and started
 * (or, with {@code --running}, the one already up), a warm-up of {@code warmupSeconds} at {@code rate}, then
 * {@code seconds} at {@code rate} orders/s, open loop (wrk, paced: {@link Wrk}; {@code -Dgenerator=java} places them
 * with {@link OrderLoad}, the Java client, as the benchmark's latency run did before); commit → applied on both hops
 * from the consumers' own histograms, and each relay's stages. {@code rounds} repeats the measured part, each round
 * settled first ({@link Pipeline#settle}). Each part waits until both hops have applied every order it placed, so
 * that a round's figures are its own orders'.
 */
public final class LatencyAlone {

    private LatencyAlone() {
    }

    public static void main(String[] args) throws Exception {
        boolean running = List.of(args).contains("--running");
        double rate = Double.parseDouble(System.getProperty("rate", "400"));
        int seconds = Integer.getInteger("seconds", 60);
        int warmupSeconds = Integer.getInteger("warmupSeconds", 20);
        int rounds = Integer.getInteger("rounds", 1);
        boolean java = "java".equals(System.getProperty("generator", "wrk"));
        Path root = Path.of(System.getProperty("benchmarks.root", ".")).toAbsolutePath().normalize();
        SystemUnderTest system = ChaosRun.system();
        if (!running) {
            Pipeline.script(root, "deploy/local/reset");
            Pipeline.script(root, "deploy/local/up", "--no-build");
        }
        try {
            String run = "latency-" + System.currentTimeMillis();
            Wrk wrk = Wrk.in(root.resolve("deploy/benchmarks/target/wrk"));
            System.out.printf("[latency] load average %s; warm-up: %d s at %.0f/s, not counted%n",
                    SideBySide.loadAverage(), warmupSeconds, rate);
            drained(system, place(system, wrk, java, run + "-warmup", warmupSeconds, rate));
            for (int round = 1; round <= rounds; round++) {
                // As the benchmark's latency run: what autovacuum owes for what came before is done before, not inside, a round.
                System.out.printf("[latency] settle: VACUUM (ANALYZE) of order-service's and inventory's tables, %.1f s%n",
                        Pipeline.settle(system));
                PipelineFigures figures = PipelineFigures.samplingFromNow(Map.of("inventory-service", system.inventoryService(),
                        "order-service", system.orderService()), ChaosRun.relays(), Duration.ofSeconds(1));
                List<UUID> orders;
                long started = System.nanoTime();
                try {
                    orders = place(system, wrk, java, run + "-" + round, seconds, rate);
                    double placedPerSecond = orders.size() / ((System.nanoTime() - started) / 1e9);
                    drained(system, orders); // close() then takes one more sample: the last orders' figures are in it
                    System.out.printf("[latency] round %d of %d, %d s at %.0f orders/s asked, %,d orders (%.0f/s placed; %s),"
                            + " load average %s%n", round, rounds, seconds, rate, orders.size(), placedPerSecond,
                            java ? "OrderLoad" : "wrk", SideBySide.loadAverage());
                } finally {
                    figures.close();
                }
                System.out.print(figures.toText());
            }
        } finally {
            if (!running) {
                Pipeline.script(root, "deploy/local/down");
            }
        }
    }

    /** The orders placed, accepted ones only. */
    private static List<UUID> place(SystemUnderTest system, Wrk wrk, boolean java, String run, int seconds, double rate)
            throws Exception {
        if (!java) {
            wrk.place(system.orderService(), run, 32, seconds, rate);
            return Wrk.ordersOf(system, run);
        }
        List<OrderLoad.Request> requests = new OrderLoad(system.orderService(), run, 11, 3, 32)
                .run((int) Math.round(rate * seconds), rate, progress -> { });
        List<UUID> accepted = requests.stream().filter(r -> r.result() == OrderLoad.Result.OK).map(OrderLoad.Request::orderId).toList();
        if (accepted.size() < requests.size()) {
            System.out.printf("[latency] %d of %d requests not accepted%n", requests.size() - accepted.size(), requests.size());
        }
        return accepted;
    }

    /** Both hops done with these orders (at most 5 minutes each). */
    private static void drained(SystemUnderTest system, List<UUID> orders) throws Exception {
        Pipeline.awaitApplied(system, orders);
        Pipeline.awaitReplies(system, orders);
    }
}
