package dev.outboxinbox.benchmarks;

import dev.outboxinbox.chaos.ChaosRun;
import dev.outboxinbox.system.PipelineFigures;
import dev.outboxinbox.system.SystemUnderTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * The whole system as deploy/local runs it on this machine (order-service, inventory-service and both
 * relays, on the same PostgreSQL and RabbitMQ), reset first: orders through {@code POST /orders}.
 * <ol>
 *   <li>saturation: a closed loop of {@code clients} requests in flight ({@link Wrk}); orders/s accepted (201)
 *       and orders/s applied in inventory (its decision committed: {@code order_outcomes.decided_at});</li>
 *   <li>latency: half that rate, open loop ({@link Wrk}, paced: Poisson arrivals), from a settled system (the backlog
 *       drained, the databases vacuumed: {@link #settle}) after a warm-up at that rate; commit → applied as each consumer's own
 *       histogram shows it (the WAL's commit time to the inbox commit), the relays' part of it from theirs (commit → read,
 *       handed, confirmed), and placed → applied in inventory per order (order-service's {@code placed_at} to inventory's
 *       {@code decided_at});</li>
 *   <li>memory: each service's RSS idle after start, at its peak under saturation, idle after;</li>
 *   <li>CPU: what each part of the machine used per order during saturation ({@link Cpu}), and where
 *       each service spends it: a JFR profile of every service through a further run at saturation,
 *       after the measured one, so that the recording does not weigh on the figures ({@link Hotspots}).</li>
 * </ol>
 */
final class Pipeline {

    static final List<String> SERVICES = List.of("order-service", "inventory-service", "outbox-relay", "outbox-relay-inventory");

    record Result(int clients, int orders, double acceptedPerSecond, double appliedPerSecond,
                  double repliesDrainedAfterSeconds, Cpu.Profile cpu, int profiledSeconds, List<Hotspots.Profile> hotspots,
                  double latencyRate, int latencyOrders, Cpu.Profile latencyCpu, Map<String, Map<String, Object>> commitToApplied,
                  Map<String, Map<String, Map<String, Object>>> relayCommitTo, Percentiles placedToApplied,
                  Map<String, Double> rssIdleMib, Map<String, Double> rssPeakMib, Map<String, Double> rssAfterMib) {
    }

    private final Scratch scratch;
    private final SystemUnderTest system;
    private final Settings settings;
    private final Path profiles;

    /** @param profiles where the JFR recordings are kept */
    Pipeline(Scratch scratch, SystemUnderTest system, Settings settings, Path profiles) {
        this.scratch = scratch;
        this.system = system;
        this.settings = settings;
        this.profiles = profiles;
    }

    Result measure() throws Exception {
        Path root = scratch.root();
        script(root, "deploy/local/reset");
        script(root, "deploy/local/up");
        try {
            Map<String, Long> pids = pids(root, SERVICES);
            Map<String, Double> idle = Memory.nowMib(pids);
            String run = "bench-" + System.currentTimeMillis();
            Wrk wrk = Wrk.in(root.resolve("deploy/benchmarks/target/wrk"));

            System.out.printf("[pipeline] warm-up: %d s at saturation (%d in flight), not counted%n",
                    settings.warmupSeconds(), settings.clients());
            wrk.place(system.orderService(), run + "-warmup", settings.clients(), settings.warmupSeconds());
            List<UUID> warmUp = Wrk.ordersOf(system, run + "-warmup");
            awaitApplied(system, warmUp);
            awaitReplies(system, warmUp);

            System.out.printf("[pipeline] saturation: %d s, %d in flight%n", settings.saturationSeconds(), settings.clients());
            Cpu.Snapshot cpuBefore = Cpu.read(pids);
            Instant firstSent = Instant.now();
            Memory memory = Memory.samplingPeak(pids);
            Wrk.Result saturation;
            List<UUID> ok;
            try {
                saturation = wrk.place(system.orderService(), run + "-saturation", settings.clients(), settings.saturationSeconds());
                ok = Wrk.ordersOf(system, run + "-saturation");
                awaitApplied(system, ok);
            } finally {
                memory.close();
            }
            Cpu.Profile cpu = Cpu.between(cpuBefore, Cpu.read(pids), ok.size());
            Map<String, Double> peak = memory.peakMib();
            double acceptedPerSecond = saturation.createdPerSecond();
            Map<UUID, Instant> applied = appliedAt(ok);
            Instant lastApplied = applied.values().stream().max(Instant::compareTo).orElseThrow();
            double appliedPerSecond = applied.size() / (Duration.between(firstSent, lastApplied).toNanos() / 1e9);
            System.out.printf("[pipeline] saturation: %,.0f orders/s accepted, %,.0f orders/s applied in inventory%n",
                    acceptedPerSecond, appliedPerSecond);
            // The replies' hop drains too before the latency run, or its figures would be the backlog's.
            long repliesFrom = System.nanoTime();
            awaitReplies(system, ok);
            double repliesBehindSeconds = (System.nanoTime() - repliesFrom) / 1e9;
            System.out.printf("[pipeline] the replies' hop drained %.1f s after inventory had applied every order%n", repliesBehindSeconds);

            double rate = Math.max(1, acceptedPerSecond / 2);
            System.out.printf("[pipeline] settle: VACUUM (ANALYZE) of order-service's and inventory's tables, %.1f s%n", settle(system));
            System.out.printf("[pipeline] latency: warm-up, %d s at %,.0f orders/s, not counted%n", settings.warmupSeconds(), rate);
            List<UUID> pacedWarmUp = Wrk.ordersOf(system, wrk.place(system.orderService(), run + "-latency-warmup", settings.clients(),
                    settings.warmupSeconds(), rate).run());
            awaitApplied(system, pacedWarmUp);
            awaitReplies(system, pacedWarmUp);
            System.out.printf("[pipeline] latency: %d s at %,.0f orders/s (half the saturation rate), paced%n",
                    settings.latencySeconds(), rate);
            PipelineFigures figures = PipelineFigures.samplingFromNow(Map.of("inventory-service", system.inventoryService(),
                    "order-service", system.orderService()), ChaosRun.relays(), Duration.ofSeconds(1));
            List<UUID> paced;
            Cpu.Snapshot latencyCpuBefore = Cpu.read(pids);
            Cpu.Profile latencyCpu;
            try {
                // The load generator that costs least (wrk): the Java client's 1.4 ms of CPU an order, on the machine
                // measured, was most of the tail (deploy/benchmarks/README, "The load generator was the tail").
                Wrk.Result placed = wrk.place(system.orderService(), run + "-latency", settings.clients(), settings.latencySeconds(), rate);
                paced = Wrk.ordersOf(system, run + "-latency");
                if (placed.createdPerSecond() < 0.95 * rate) {
                    // Every connection was busy: the schedule fell behind. The figures are for the rate placed.
                    System.out.printf("[pipeline] latency: %,.0f orders/s placed, not the %,.0f asked for%n", placed.createdPerSecond(), rate);
                }
                rate = placed.createdPerSecond();
                // How busy "half the saturation rate" keeps the machine: the batches are smaller than at saturation.
                latencyCpu = Cpu.between(latencyCpuBefore, Cpu.read(pids), paced.size());
                System.out.printf("[pipeline] latency: %,d orders placed, the machine %.0f %% busy meanwhile%n", paced.size(),
                        100 * latencyCpu.machineShare());
                awaitApplied(system, paced);
                awaitReplies(system, paced);
            } finally {
                figures.close();
            }
            @SuppressWarnings("unchecked")
            Map<String, Map<String, Object>> commitToApplied = (Map<String, Map<String, Object>>) figures.summary().get("commitToApplied");
            @SuppressWarnings("unchecked")
            Map<String, Map<String, Map<String, Object>>> relayCommitTo =
                    (Map<String, Map<String, Map<String, Object>>>) figures.summary().get("relayCommitTo");
            Map<UUID, Instant> pacedApplied = appliedAt(paced);
            List<Double> placedToApplied = new ArrayList<>();
            placedAt(paced).forEach((order, placed) -> {
                Instant at = pacedApplied.get(order);
                if (at != null) {
                    placedToApplied.add(Duration.between(placed, at).toNanos() / 1e6);
                }
            });
            Map<String, Double> after = Memory.nowMib(pids);
            // Last: a recording's start and stop cost the services compiled code they take minutes to compile again
            // (order-service at 380/s: 1.0-1.3 ms of CPU an order before a recording, 2.1 and 1.6 in the two 40 s rounds
            // after it, 0.8 a few minutes later); the latency run paid it when it came after the profile.
            System.out.printf("[pipeline] profile: %d s more at saturation, each service recorded by JFR (not counted above)%n",
                    settings.profileSeconds());
            Hotspots recording = Hotspots.start(pids, profiles);
            List<Hotspots.Profile> hotspots;
            List<UUID> profiled;
            try {
                wrk.place(system.orderService(), run + "-profile", settings.clients(), settings.profileSeconds());
                profiled = Wrk.ordersOf(system, run + "-profile");
                awaitApplied(system, profiled);
            } finally {
                hotspots = recording.stop();
            }
            awaitReplies(system, profiled);
            for (Hotspots.Profile profile : hotspots) {
                System.out.printf("[pipeline] profile: %s: %s%n", profile.service(), Hotspots.describe(profile.layers(), 4));
            }
            return new Result(settings.clients(), ok.size(), acceptedPerSecond, appliedPerSecond, repliesBehindSeconds, cpu,
                    settings.profileSeconds(), hotspots,
                    rate, paced.size(), latencyCpu, commitToApplied, relayCommitTo, Percentiles.of(placedToApplied), idle, peak, after);
        } finally {
            script(root, "deploy/local/down");
        }
    }

    /**
     * VACUUM (ANALYZE) of every table of order-service's and inventory's databases, as the services' own roles (their
     * owners); returns the seconds it took. The saturation run leaves autovacuum a burst of work (a first pass over the
     * hundred thousand rows it wrote to each table, and their statistics), which it starts within its next minute: on
     * two cores, inside the latency run, where it made the tail (deploy/benchmarks/README, "The half-rate tail"). It
     * is the saturation's leftover, as its backlog is, and is done before the latency run as the backlog is drained;
     * what the latency run's own orders leave autovacuum stays in its minute.
     */
    static double settle(SystemUnderTest system) throws SQLException {
        long from = System.nanoTime();
        for (var database : List.of(system.orders(), system.inventory())) {
            try (Connection c = database.connect(); Statement statement = c.createStatement()) {
                List<String> tables = new ArrayList<>();
                try (ResultSet rs = statement.executeQuery("SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables")) {
                    while (rs.next()) {
                        tables.add(rs.getString(1));
                    }
                }
                if (tables.isEmpty()) {
                    throw new IllegalStateException(database + " has no tables: is the system up?");
                }
                // Autocommit: VACUUM cannot run inside a transaction.
                statement.execute("VACUUM (ANALYZE) " + String.join(", ", tables));
                // A table the role does not own is skipped with a warning, not an error: it would not be settled.
                SQLWarning warning = statement.getWarnings();
                if (warning != null) {
                    throw new IllegalStateException("VACUUM as " + database + ": " + warning.getMessage());
                }
            }
        }
        return (System.nanoTime() - from) / 1e9;
    }

    /** Waits (at most 5 minutes) until inventory has decided every one of these orders. */
    static void awaitApplied(SystemUnderTest system, List<UUID> orders) throws SQLException {
        awaitCount(system, orders, "SELECT count(*) FROM order_outcomes WHERE order_id = ANY(?)", true);
    }

    /** Waits until order-service has learnt inventory's decision on every one (the reply hop is drained too). */
    static void awaitReplies(SystemUnderTest system, List<UUID> orders) throws SQLException {
        awaitCount(system, orders, "SELECT count(*) FROM orders WHERE id = ANY(?) AND status <> 'PENDING'", false);
    }

    private static void awaitCount(SystemUnderTest system, List<UUID> orders, String sql, boolean inventory) throws SQLException {
        long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        try (Connection c = inventory ? system.inventory().connect() : system.orders().connect();
             PreparedStatement query = c.prepareStatement(sql)) {
            query.setArray(1, c.createArrayOf("uuid", orders.toArray()));
            while (true) {
                try (ResultSet rs = query.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) >= orders.size()) {
                        return;
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(rs.getLong(1) + " of " + orders.size() + " orders after 5 minutes: "
                                + sql + " (is the pipeline stuck? deploy/local/status)");
                    }
                }
                LockSupport.parkNanos(Duration.ofMillis(100).toNanos());
            }
        }
    }

    /** When inventory's transaction decided each order (the decision's timestamp, taken in that transaction). */
    private Map<UUID, Instant> appliedAt(List<UUID> orders) throws SQLException {
        Map<UUID, Instant> at = new HashMap<>();
        try (Connection c = system.inventory().connect();
             PreparedStatement query = c.prepareStatement("SELECT order_id, decided_at FROM order_outcomes WHERE order_id = ANY(?)")) {
            Array ids = c.createArrayOf("uuid", orders.toArray());
            query.setArray(1, ids);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    at.put(rs.getObject(1, UUID.class), rs.getTimestamp(2).toInstant());
                }
            }
        }
        return at;
    }

    /** When order-service placed each order (its {@code placed_at}). */
    private Map<UUID, Instant> placedAt(List<UUID> orders) throws SQLException {
        Map<UUID, Instant> at = new HashMap<>();
        try (Connection c = system.orders().connect();
             PreparedStatement query = c.prepareStatement("SELECT id, placed_at FROM orders WHERE id = ANY(?)")) {
            query.setArray(1, c.createArrayOf("uuid", orders.toArray()));
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    at.put(rs.getObject(1, UUID.class), rs.getTimestamp(2).toInstant());
                }
            }
        }
        return at;
    }

    /** The services deploy/local started: their pid files. */
    static Map<String, Long> pids(Path root, List<String> services) throws IOException {
        Path runDir = System.getenv("LOCAL_RUN_DIR") != null ? Path.of(System.getenv("LOCAL_RUN_DIR")) : root.resolve("deploy/local/run");
        Map<String, Long> pids = new LinkedHashMap<>();
        for (String service : services) {
            pids.put(service, Long.parseLong(Files.readString(runDir.resolve(service + ".pid")).trim()));
        }
        return pids;
    }

    static void script(Path root, String script, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("bash", root.resolve(script).toString()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(root.toFile()).inheritIO().start();
        if (process.waitFor() != 0) {
            throw new IllegalStateException(script + " exited with " + process.exitValue());
        }
    }
}
