package dev.outboxinbox.benchmarks;

import com.rabbitmq.client.Connection;
import dev.outboxinbox.chaos.ChaosRun;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The side-by-side benchmark, one entry point ({@code deploy/benchmarks/run [--smoke]}): every
 * figure in one run on this machine, so that ratios compare like with like on a shared, noisy
 * machine. In order: the pgbench ceiling and the database's floor for the whole pipeline; the whole
 * pipeline (deploy/local) at saturation and at half of it, with each service's memory; outbox-relay
 * against Debezium Server, alternating; inventory with its inbox on and off, alternating; the ceiling
 * and the floor again (how much the machine drifted).
 * Then the report: {@code deploy/benchmarks/target/report/report.txt}, {@code report.json}, {@code chart.png}.
 * What it made on the servers is removed before and after (databases, slots, role, virtual hosts;
 * deploy/local is reset first and stopped after).
 */
public final class SideBySide {

    private SideBySide() {
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        boolean smoke = List.of(args).contains("--smoke");
        Settings settings = Settings.of(smoke);
        Path root = Path.of(System.getProperty("benchmarks.root", ".")).toAbsolutePath().normalize();
        Path target = root.resolve("deploy/benchmarks/target");
        Path peersJava = Path.of(required("benchmarks.peers-java-home"), "bin", "java");
        Path debeziumServer = Path.of(required("benchmarks.debezium-server-home"));
        Scratch scratch = new Scratch(root);

        Map<String, Object> conditions = new LinkedHashMap<>();
        conditions.put("date", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        conditions.put("mode", smoke ? "smoke (small counts: the numbers mean nothing)" : "full");
        conditions.put("commit", command(root, "git", "rev-parse", "--short", "HEAD"));
        conditions.put("cores", Runtime.getRuntime().availableProcessors());
        conditions.put("loadAverageStart", loadAverage());
        conditions.put("settings", settings);

        scratch.cleanUp();
        List<Ceiling.Result> ceilings = new ArrayList<>();
        List<Floor.Result> floors = new ArrayList<>();
        Pipeline.Result pipeline;
        List<RelayPeers.Turn> turns;
        List<InboxCost.Round> inbox;
        try {
            conditions.put("postgresql", scratch.pg().query("postgres", "SHOW server_version"));
            try (Connection broker = scratch.broker().connectionFactory("/").newConnection()) {
                conditions.put("rabbitmq", String.valueOf(broker.getServerProperties().get("version")));
            }
            conditions.put("services' JVM", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
            conditions.put("relays' JVM", javaVersion(peersJava.getParent().getParent()));
            conditions.put("debezium", debeziumVersion(debeziumServer));

            System.out.printf("[ceiling] pgbench, %d clients, %d s%n", settings.clients(), settings.ceilingSeconds());
            ceilings.add(Ceiling.measure(scratch, target, settings.clients(), settings.ceilingSeconds()));
            System.out.printf("[ceiling] %,.0f tps%n", ceilings.get(0).tps());
            scratch.drop(Scratch.CEILING_DB);
            floors.add(floor(scratch, target, settings));

            pipeline = new Pipeline(scratch, ChaosRun.system(), settings, target.resolve("report/jfr")).measure();

            List<Peer> peers = List.of(
                    new OurRelay(scratch, peersJava, target.resolve("bench-outbox-relay.log").toFile()),
                    new DebeziumServer(scratch, debeziumServer, target.resolve("debezium-server-run"), peersJava,
                            target.resolve("bench-debezium-server.log").toFile()));
            turns = new RelayPeers(scratch, settings.backlog()).measure(peers, settings.peerRounds());

            inbox = new InboxCost(scratch, settings.inboxEvents(), target.resolve("bench-inventory-service.log").toFile())
                    .measure(settings.inboxRounds());

            System.out.printf("[ceiling] again: pgbench, %d clients, %d s%n", settings.clients(), settings.ceilingSeconds());
            ceilings.add(Ceiling.measure(scratch, target, settings.clients(), settings.ceilingSeconds()));
            System.out.printf("[ceiling] %,.0f tps%n", ceilings.get(1).tps());
            floors.add(floor(scratch, target, settings));
        } finally {
            scratch.cleanUp();
        }
        conditions.put("loadAverageEnd", loadAverage());
        Path out = target.resolve("report");
        System.out.println();
        System.out.print(new Report(conditions, ceilings, floors, pipeline, turns, inbox).write(out));
        System.out.println("\nreport: " + out.resolve("report.txt") + ", " + out.resolve("report.json") + ", chart: " + out.resolve("chart.png"));
    }

    private static Floor.Result floor(Scratch scratch, Path target, Settings settings) throws IOException, InterruptedException {
        System.out.printf("[floor] pgbench, the pipeline's whole database work (batches of %d), %d clients, %d s%n",
                settings.floorBatch(), settings.clients(), settings.ceilingSeconds());
        Floor.Result floor = Floor.measure(scratch, target, settings.clients(), settings.ceilingSeconds(), settings.floorBatch());
        System.out.printf("[floor] %,.0f orders/s (%,.0f tps)%n", floor.ordersPerSecond(), floor.tps());
        scratch.drop(Scratch.FLOOR_DB);
        return floor;
    }

    private static String required(String property) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("-D" + property + " is not set (deploy/benchmarks/run sets it)");
        }
        return value;
    }

    /** The 1-, 5- and 15-minute load averages. */
    static String loadAverage() throws IOException {
        String[] fields = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
        return fields[0] + " " + fields[1] + " " + fields[2];
    }

    private static String javaVersion(Path javaHome) throws IOException {
        Properties release = new Properties();
        try (var in = Files.newInputStream(javaHome.resolve("release"))) {
            release.load(in);
        }
        return (release.getProperty("IMPLEMENTOR", "") + " " + release.getProperty("JAVA_VERSION", "?")).replace("\"", "").trim();
    }

    private static String debeziumVersion(Path home) throws IOException {
        try (var files = Files.list(home.resolve("lib"))) {
            return files.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("debezium-server-core-"))
                    .map(n -> "Debezium Server " + n.substring("debezium-server-core-".length(), n.length() - ".jar".length()))
                    .findFirst().orElse("?");
        }
    }

    private static String command(Path directory, String... command) {
        try {
            Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return process.waitFor() == 0 ? output : "?";
        } catch (IOException e) {
            return "?";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "?";
        }
    }
}
