package dev.outboxinbox.benchmarks;

import dev.outboxinbox.chaos.ChaosRun;
import dev.outboxinbox.system.SystemUnderTest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * order-service alone ({@code deploy/benchmarks/order-service}): the service as deploy/local runs it, reset
 * first, with no relay and no consumer running, at saturation: wrk places orders, {@code clients} in flight,
 * for {@code seconds} after a warm-up of {@code warmupSeconds}. It prints orders/s accepted, the CPU each part
 * of the machine used per order, and, with {@code --profile}, where order-service's CPU goes (a JFR recording
 * of a further run, not counted). What the outbox gathers meanwhile is left for the next reset: no relay reads it.
 * Run it in two checkouts, alternating, to compare two commits.
 */
public final class OrderServiceAlone {

    private OrderServiceAlone() {
    }

    public static void main(String[] args) throws Exception {
        boolean profile = List.of(args).contains("--profile");
        int clients = Integer.getInteger("clients", 32);
        int warmupSeconds = Integer.getInteger("warmupSeconds", 20);
        int seconds = Integer.getInteger("seconds", 30);
        Path root = Path.of(System.getProperty("benchmarks.root", ".")).toAbsolutePath().normalize();
        Path target = root.resolve("deploy/benchmarks/target");
        SystemUnderTest system = ChaosRun.system();
        Wrk wrk = Wrk.in(target.resolve("wrk"));

        Pipeline.script(root, "deploy/local/reset");
        Pipeline.script(root, "deploy/local/up", "--no-build", "order-service");
        try {
            Map<String, Long> pids = Pipeline.pids(root, List.of("order-service"));
            String run = "alone-" + System.currentTimeMillis();
            System.out.printf("[order-service alone] load average %s; warm-up: %d s, %d in flight, not counted%n",
                    SideBySide.loadAverage(), warmupSeconds, clients);
            wrk.place(system.orderService(), run + "-warmup", clients, warmupSeconds);

            System.out.printf("[order-service alone] measured: %d s, %d in flight%n", seconds, clients);
            Cpu.Snapshot before = Cpu.read(pids);
            Wrk.Result measured = wrk.place(system.orderService(), run, clients, seconds);
            // Per order written: wrk's 201s, and those whose answer was still on its way when its time ran out.
            int written = Wrk.ordersOf(system, run).size();
            Cpu.Profile cpu = Cpu.between(before, Cpu.read(pids), written);
            System.out.printf("[order-service alone] %,.0f orders/s accepted (%,d in %.1f s); wrk's latency p50 %.1f ms, p99 %.1f ms%n",
                    measured.createdPerSecond(), measured.created(), measured.seconds(), measured.p50Ms(), measured.p99Ms());
            System.out.printf("[order-service alone] CPU %.0f %% of the machine; per order:%n", 100 * cpu.machineShare());
            cpu.msPerOrder().forEach((part, ms) -> System.out.printf("    %-50s %6.2f ms%n", part, ms));
            System.out.printf("    %-50s %6.2f ms%n", "all parts", cpu.msPerOrder().values().stream().mapToDouble(Double::doubleValue).sum());
            if (written < measured.created()) {
                throw new IllegalStateException(measured.created() + " orders answered 201 but " + written + " in the database");
            }

            if (profile) {
                Path profiles = target.resolve("order-service-alone/jfr");
                Files.createDirectories(profiles);
                System.out.printf("[order-service alone] profile: %d s more, recorded by JFR (not counted above)%n", seconds);
                Hotspots recording = Hotspots.start(pids, profiles);
                try {
                    wrk.place(system.orderService(), run + "-profile", clients, seconds);
                } finally {
                    for (Hotspots.Profile hotspots : recording.stop()) {
                        System.out.printf("[order-service alone] profile: %s: %s%n", hotspots.service(), Hotspots.describe(hotspots.layers(), 8));
                        System.out.printf("[order-service alone] methods: %s%n", Hotspots.describe(hotspots.methods(), 12));
                    }
                }
            }
        } finally {
            Pipeline.script(root, "deploy/local/down");
        }
    }
}
