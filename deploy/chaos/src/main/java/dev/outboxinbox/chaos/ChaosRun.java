package dev.outboxinbox.chaos;

import dev.outboxinbox.events.Topology;
import dev.outboxinbox.system.Broker;
import dev.outboxinbox.system.Database;
import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.system.PipelineFigures;
import dev.outboxinbox.system.SystemUnderTest;
import dev.outboxinbox.system.VerificationReport;
import dev.outboxinbox.system.Verifier;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;

/**
 * A fault-injection run against a running system: orders at a steady rate through HTTP, a seeded
 * schedule of faults meanwhile, then drain and verify. Exit 0 only if the verifier found nothing;
 * with {@code --negative-control} (inventory started without deduplication), exit 0 only if the
 * verifier DID find duplicate effects. Started by deploy/chaos/run, which prepares the system.
 */
public final class ChaosRun {

    private static final Map<String, Map<String, String>> PROFILES = Map.of(
            // Fits CI: about 40 s of load, one of every fault that matters, and three of the edge cases.
            "short", Map.ofEntries(Map.entry("orders", "1200"), Map.entry("rate", "30"), Map.entry("broker-restarts", "2"),
                    Map.entry("broker-node-restarts", "0"), Map.entry("kills", "1"), Map.entry("postgres-restarts", "1"),
                    Map.entry("broker-down-while-relay-starts", "1"), Map.entry("poison", "1"), Map.entry("republish", "1"),
                    Map.entry("slot-recreations", "1"), Map.entry("relay-fresh-starts", "0"), Map.entry("foreign-messages", "1"),
                    Map.entry("inventory-db-refusals", "1"), Map.entry("inventory-db-outages", "0"),
                    Map.entry("binding-removals", "0"), Map.entry("second-inventory", "0"),
                    Map.entry("relay-takeovers", "0"), Map.entry("consumer-scaling", "0"), Map.entry("double-kills", "0")),
            // The issues' run: ten broker restarts and more, three kills of each service, every edge case.
            "full", Map.ofEntries(Map.entry("orders", "12000"), Map.entry("rate", "40"), Map.entry("broker-restarts", "10"),
                    Map.entry("broker-node-restarts", "2"), Map.entry("kills", "3"), Map.entry("postgres-restarts", "2"),
                    Map.entry("broker-down-while-relay-starts", "2"), Map.entry("poison", "2"), Map.entry("republish", "2"),
                    Map.entry("slot-recreations", "1"), Map.entry("relay-fresh-starts", "1"), Map.entry("foreign-messages", "2"),
                    Map.entry("inventory-db-refusals", "1"), Map.entry("inventory-db-outages", "1"),
                    Map.entry("binding-removals", "1"), Map.entry("second-inventory", "1"),
                    Map.entry("relay-takeovers", "2"), Map.entry("consumer-scaling", "2"), Map.entry("double-kills", "2")));

    private static final long START = System.nanoTime();

    private final Map<String, String> options;
    private final long started = System.nanoTime();
    private final AtomicReference<String> now = new AtomicReference<>("load starting");
    private final AtomicReference<OrderLoad.Progress> progress = new AtomicReference<>();

    private ChaosRun(Map<String, String> options) {
        this.options = options;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>(PROFILES.get("short"));
        options.putAll(Map.of("target", "local", "seed", "1", "convergence-bound", "PT3M", "republish-count", "20"));
        List<String> given = List.of(args);
        for (int i = 0; i < given.size(); i++) {
            String arg = given.get(i);
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + arg);
            }
            String key = arg.substring(2);
            if (PROFILES.containsKey(key)) {
                options.putAll(PROFILES.get(key));
                options.put("profile", key);
            } else if (key.equals("negative-control")) {
                options.put(key, "true");
            } else if (options.containsKey(key) || key.equals("report") || key.equals("attempts")) {
                if (i + 1 >= given.size()) {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                options.put(key, given.get(++i));
            } else {
                throw new IllegalArgumentException("unknown option " + arg + "; options: --short, --full, --negative-control, --report, --attempts, --"
                        + String.join(", --", options.keySet()));
            }
        }
        System.exit(new ChaosRun(options).run());
    }

    private int run() throws Exception {
        Path root = Path.of(env("CHAOS_ROOT", ".")).toAbsolutePath().normalize();
        Target target = Target.named(options.get("target"), root);
        long seed = Long.parseLong(options.get("seed"));
        int orders = Integer.parseInt(options.get("orders"));
        double rate = Double.parseDouble(options.get("rate"));
        boolean negativeControl = options.containsKey("negative-control");
        Duration bound = Duration.parse(options.get("convergence-bound"));
        SystemUnderTest system = system();
        Verifier verifier = new Verifier(system);
        Injections injections = new Injections(system, seed);

        Map<String, Integer> counts = new LinkedHashMap<>();
        for (Schedule.Fault fault : Schedule.Fault.values()) {
            counts.put(fault.option, integer(fault.option));
        }
        Schedule schedule = Schedule.of(counts, (long) (orders / rate * 1000), seed);
        say("target %s, seed %d, %d orders at %.0f/s, %d faults%s", options.get("target"), seed, orders, rate,
                schedule.steps().size(), negativeControl ? ", NEGATIVE CONTROL: inventory-service runs without deduplication" : "");
        schedule.steps().forEach(s -> say("  planned at %5.1f s: %s", s.atMillis() / 1000.0, s.fault().description));

        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "progress");
            t.setDaemon(true);
            return t;
        });
        reporter.scheduleAtFixedRate(() -> say("%s | %s", progress.get() == null ? "load starting" : progress.get(), now.get()),
                5, 5, TimeUnit.SECONDS);

        // The services' own figures through the run: commit → applied and the relays' lag, across restarts.
        PipelineFigures figures = PipelineFigures.sampling(Map.of(
                        "order-service", system.orderService(), "inventory-service", system.inventoryService(),
                        "inventory-service (second)", URI.create("http://127.0.0.1:" + Target.Extra.SECOND_INVENTORY.port)),
                Map.of("outbox-relay", URI.create(env("OUTBOX_RELAY_URL", "http://127.0.0.1:8083")),
                        "outbox-relay-inventory", URI.create(env("OUTBOX_RELAY_INVENTORY_URL", "http://127.0.0.1:8084"))),
                Duration.ofSeconds(2));

        OrderLoad load = new OrderLoad(system.orderService(), "chaos-" + seed + "-" + System.currentTimeMillis(), seed,
                Integer.parseInt(options.getOrDefault("attempts", "8")));
        CompletableFuture<List<OrderLoad.Request>> requests = CompletableFuture.supplyAsync(() -> load.run(orders, rate, progress::set));

        List<String> timeline = Collections.synchronizedList(new ArrayList<>());
        boolean harnessFailed = false;
        for (Schedule.Step step : schedule.steps()) {
            waitUntil(step.atMillis());
            long begin = elapsedMillis();
            now.set("fault: " + step.fault().description);
            try {
                inject(step, target, injections);
                String line = "%6.1f s  %-40s %5.1f s".formatted(begin / 1000.0, step.fault().description, (elapsedMillis() - begin) / 1000.0);
                timeline.add(line);
                say("fault done: %s", line.trim());
            } catch (Exception e) {
                harnessFailed = true;
                timeline.add("%6.1f s  %s FAILED TO INJECT: %s".formatted(begin / 1000.0, step.fault().description, e.getMessage()));
                say("could not inject %s: %s", step.fault().description, e.getMessage());
            }
            now.set("between faults");
        }
        now.set("faults done; load finishing");
        List<OrderLoad.Request> placed = requests.join();
        now.set("draining");
        say("load done: %s; making sure every service runs", progress.get());
        target.ensureRunning();

        String endOfLoad = verifier.walPosition();
        Verifier.Settling settling = verifier.awaitConvergence(endOfLoad, injections.poison().size(), bound, ChaosRun::say);
        VerificationReport report = verifier.verify(placed, injections.poison(), target.duplicatesAbsorbed(), settling, bound)
                .withFaults(timeline);
        reporter.shutdownNow();
        figures.close();

        System.out.println();
        System.out.println("== chaos report (seed " + seed + ", " + injections.republished() + " events republished, "
                + injections.poison().size() + " poison messages) ==");
        System.out.print(report.toText());
        // Not a verdict either: what an operator's dashboard would have shown through the faults.
        System.out.print(figures.toText());
        // Not a verdict: each recovery republished the outbox table (its copies are in "duplicates absorbed").
        List<String> recoveries = target.relayRecoveries();
        System.out.println("relay recoveries     " + recoveries.size() + " (the slot could not hold every event: first start,"
                + " slot dropped or remade)");
        recoveries.forEach(line -> System.out.println("    " + line.replaceFirst(".*Recovery done: ", "")));
        Path json = Path.of(options.getOrDefault("report", root.resolve("deploy/chaos/reports/chaos-" + options.get("target")
                + "-seed" + seed + (negativeControl ? "-negative-control" : "") + ".json").toString()));
        Files.createDirectories(json.toAbsolutePath().getParent());
        Files.writeString(json, report.toJson(Map.of("figures", figures.summary())));
        say("report written to %s", json);

        if (harnessFailed) {
            say("HARNESS ERROR: a fault could not be injected; the run proves nothing either way");
            return 2;
        }
        if (negativeControl) {
            if (!report.passed() && report.duplicateEffects() > 0) {
                say("NEGATIVE CONTROL PASSED: with deduplication off, the verifier reported %d duplicate effect(s), as it must",
                        report.duplicateEffects());
                return 0;
            }
            say("NEGATIVE CONTROL FAILED: deduplication was off and the verifier saw no duplicate effect; it cannot be trusted");
            return 1;
        }
        return report.passed() ? 0 : 1;
    }

    private void inject(Schedule.Step step, Target target, Injections injections) throws Exception {
        long outage = step.outageMillis();
        switch (step.fault()) {
            case BROKER_RESTART -> {
                target.stopBrokerApp();
                pause(outage);
                target.startBrokerApp();
            }
            case BROKER_NODE_RESTART -> target.restartBrokerNode();
            case KILL_RELAY -> killAndStart(target, "outbox-relay", outage);
            case KILL_INVENTORY -> killAndStart(target, "inventory-service", outage);
            case KILL_ORDER_SERVICE -> killAndStart(target, "order-service", outage);
            case KILL_REPLY_RELAY -> killAndStart(target, "outbox-relay-inventory", outage);
            case POSTGRES_RESTART -> target.restartPostgres();
            case BROKER_DOWN_WHILE_RELAY_STARTS -> {
                target.stopBrokerApp();
                target.kill("outbox-relay");
                target.start("outbox-relay");
                pause(5_000 + outage); // the relay comes up, finds no broker, and must wait for it
                target.startBrokerApp();
            }
            case POISON -> injections.publishPoison();
            case REPUBLISH -> injections.republish(Integer.parseInt(options.get("republish-count")));
            case SLOT_RECREATED -> {
                target.kill("outbox-relay");
                dropRelaySlot(target);
                pause(outage);
                // What the reset runbook's deploy/local/up (or compose's init) does: the slot made again by hand.
                target.superuserSql("orders", "SELECT pg_create_logical_replication_slot('" + relaySlot() + "', 'pgoutput')");
                target.start("outbox-relay");
            }
            case RELAY_FRESH_START -> {
                target.kill("outbox-relay");
                dropRelaySlot(target);
                target.superuserSql("outbox_relay", "DELETE FROM " + env("RELAY_OFFSETS_TABLE", "relay_offsets"));
                pause(outage);
                target.start("outbox-relay");
            }
            case FOREIGN_LOGICAL_MESSAGE -> target.superuserSql("orders",
                    "SELECT pg_logical_emit_message(true, 'chaos-another-tool', 'not an outbox event')");
            case INVENTORY_DB_READ_ONLY -> {
                target.superuserSql("postgres", "ALTER ROLE inventory_service SET default_transaction_read_only = on");
                terminateInventorySessions(target);
                try {
                    pause(10_000 + 2 * outage);
                } finally {
                    target.superuserSql("postgres", "ALTER ROLE inventory_service RESET default_transaction_read_only");
                    terminateInventorySessions(target);
                }
            }
            case INVENTORY_DB_DOWN -> {
                target.superuserSql("postgres", "ALTER DATABASE inventory ALLOW_CONNECTIONS false");
                terminateInventorySessions(target);
                try {
                    pause(60_000);
                } finally {
                    target.superuserSql("postgres", "ALTER DATABASE inventory ALLOW_CONNECTIONS true");
                }
            }
            case BINDING_REMOVED -> {
                injections.unbindInventoryQueue();
                try {
                    pause(10_000);
                } finally {
                    injections.bindInventoryQueue();
                }
                say("relay republished parked events: %s", injections.republishParked(relayUrl()));
            }
            case SECOND_INVENTORY -> {
                target.startExtra(Target.Extra.SECOND_INVENTORY);
                pause(8_000 + outage);
                target.stopExtra(Target.Extra.SECOND_INVENTORY, true);
            }
            case CONSUMER_SCALING -> consumerScaling(target, outage);
            case KILL_TWO_CONSUMERS -> killTwoConsumers(target, outage);
            case RELAY_TAKEOVER -> relayTakeover(target, outage);
        }
    }

    /**
     * A standby relay joins; the leader is killed and the standby must take the slot's lock; the killed
     * one comes back (as standby now) and the standby, leading, is killed in turn: the first takes over
     * again. The lock is watched in PostgreSQL (the standby's lock session is named after it), the
     * first relay through its readiness (its {@code role}).
     */
    private void relayTakeover(Target target, long outage) {
        String standby = "outbox-relay/" + Target.Extra.STANDBY_RELAY.instance;
        target.startExtra(Target.Extra.STANDBY_RELAY);
        boolean standbyRunning = true;
        try {
            awaitSql(target, "the standby relay's lock session", Duration.ofMinutes(2),
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + standby + "'");
            target.kill("outbox-relay");
            long killed = System.nanoTime();
            awaitSql(target, "the standby relay holding the slot's lock", Duration.ofMinutes(1),
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                            + " WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = '" + standby + "'");
            say("the standby relay took the lock %.1f s after the leader was killed", (System.nanoTime() - killed) / 1e9);
            pause(outage);
            target.start("outbox-relay");
            awaitRelayRole("standby", Duration.ofMinutes(2));
            pause(2_000);
            target.stopExtra(Target.Extra.STANDBY_RELAY, true);
            standbyRunning = false;
            long standbyKilled = System.nanoTime();
            awaitRelayRole("leader", Duration.ofMinutes(1));
            say("outbox-relay leads again %.1f s after the standby was killed", (System.nanoTime() - standbyKilled) / 1e9);
        } finally {
            if (standbyRunning) {
                target.stopExtra(Target.Extra.STANDBY_RELAY, true);
            }
        }
    }

    /**
     * Scale out and back in, mid-load: a second inventory-service joins and takes its share of the
     * partitions (three of six: their locks, held by its session, show in PostgreSQL); after a while it
     * is stopped with SIGTERM, drains what it holds and gives them back; the first reads all six again.
     */
    private void consumerScaling(Target target, long outage) {
        boolean running = true;
        try {
            secondInventoryTakesItsShare(target);
            pause(5_000 + outage);
            long stopping = System.nanoTime();
            target.stopExtra(Target.Extra.SECOND_INVENTORY, false);
            running = false;
            awaitPartitionLocks(target, "the first inventory-service reading every partition again", Duration.ofMinutes(1),
                    FIRST_INVENTORY, PARTITIONS);
            say("stopped (SIGTERM): its partitions are the first's again %.1f s after the signal", (System.nanoTime() - stopping) / 1e9);
        } finally {
            if (running) {
                target.stopExtra(Target.Extra.SECOND_INVENTORY, true);
            }
        }
    }

    /**
     * Two consumers die at once: the second inventory-service joins and takes its share, then both it
     * and the first are killed with one SIGKILL each in the same moment, so no partition has a reader
     * and every delivery in hand goes back at once; the first is started again and must read all six.
     */
    private void killTwoConsumers(Target target, long outage) {
        try {
            secondInventoryTakesItsShare(target);
            target.killTogether(List.of("inventory-service", Target.Extra.SECOND_INVENTORY.instance));
        } finally {
            target.stopExtra(Target.Extra.SECOND_INVENTORY, true);
        }
        pause(outage);
        long started = System.nanoTime();
        target.start("inventory-service");
        awaitPartitionLocks(target, "inventory-service reading every partition after both were killed", Duration.ofMinutes(2),
                FIRST_INVENTORY, PARTITIONS);
        say("both killed; the first, started again, reads all %d partitions %.1f s later", PARTITIONS, (System.nanoTime() - started) / 1e9);
    }

    /** Starts the second inventory-service and waits until its session holds the locks of its three partitions. */
    private static void secondInventoryTakesItsShare(Target target) {
        long started = System.nanoTime();
        target.startExtra(Target.Extra.SECOND_INVENTORY);
        awaitPartitionLocks(target, "the second inventory-service reading its share", Duration.ofMinutes(2),
                "= '" + INVENTORY_SESSIONS + Target.Extra.SECOND_INVENTORY.instance + "'", PARTITIONS / 2);
        say("the second inventory-service reads %d of %d partitions %.1f s after it started", PARTITIONS / 2, PARTITIONS,
                (System.nanoTime() - started) / 1e9);
    }

    /** inventory's instances' lock sessions: application_name inbox/inventory-service/<instance>. */
    private static final String INVENTORY_SESSIONS = "inbox/inventory-service/";
    /** The first instance's session, whatever its name (host/pid by default): any but the second's. */
    private static final String FIRST_INVENTORY = "LIKE '" + INVENTORY_SESSIONS + "%' AND a.application_name <> '"
            + INVENTORY_SESSIONS + Target.Extra.SECOND_INVENTORY.instance + "'";
    private static final int PARTITIONS = Topology.INVENTORY_PARTITIONS;

    /** Until the sessions named {@code nameCondition} hold exactly {@code locks} advisory locks in inventory's database. */
    private static void awaitPartitionLocks(Target target, String what, Duration atMost, String nameCondition, int locks) {
        awaitSql(target, what, atMost, "SELECT count(*) = " + locks + " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                + " WHERE l.locktype = 'advisory' AND l.granted AND a.datname = 'inventory' AND a.application_name " + nameCondition, "t");
    }

    private static void awaitSql(Target target, String what, Duration atMost, String countQuery) {
        awaitSql(target, what, atMost, countQuery, null);
    }

    /** Until the query prints {@code expected} (or, without one, anything but 0). */
    private static void awaitSql(Target target, String what, Duration atMost, String query, String expected) {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (expected == null ? target.superuserSql("postgres", query).trim().equals("0")
                : !target.superuserSql("postgres", query).trim().equals(expected)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + what + " after " + atMost.toSeconds() + " s");
            }
            pause(200);
        }
    }

    /** Until outbox-relay's readiness answers 200 with this role. */
    private static void awaitRelayRole(String role, Duration atMost) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        Pattern expected = Pattern.compile("\"role\"\\s*:\\s*\"" + role + "\"");
        long deadline = System.nanoTime() + atMost.toNanos();
        while (true) {
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(relayUrl().resolve("/q/health/ready"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200 && expected.matcher(response.body()).find()) {
                    return;
                }
            } catch (java.io.IOException notYet) {
                // starting
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("outbox-relay not ready as " + role + " after " + atMost.toSeconds() + " s");
            }
            pause(200);
        }
    }

    /** Once the killed relay's walsender let go of it. */
    private void dropRelaySlot(Target target) {
        String slot = relaySlot();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!target.superuserSql("orders", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot
                + "' AND active").trim().equals("0")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("slot " + slot + " still active 30 s after the relay was killed");
            }
            pause(200);
        }
        target.superuserSql("orders", "SELECT pg_drop_replication_slot('" + slot + "')");
    }

    private static void terminateInventorySessions(Target target) {
        target.superuserSql("postgres", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = 'inventory_service'");
    }

    private static String relaySlot() {
        return env("RELAY_SOURCE_SLOT", "outbox_relay");
    }

    private static URI relayUrl() {
        return URI.create(env("RELAY_URL", "http://127.0.0.1:8083"));
    }

    private static void killAndStart(Target target, String service, long outage) {
        target.kill(service);
        pause(outage);
        target.start(service);
    }

    /** The system deploy/local runs, from the environment deploy/local/lib.sh's load_env exports. */
    public static SystemUnderTest system() {
        String pgHost = env("POSTGRES_HOST", "127.0.0.1");
        String pgPort = env("POSTGRES_PORT", "5432");
        String jdbc = "jdbc:postgresql://" + pgHost + ":" + pgPort + "/";
        return new SystemUnderTest(URI.create(env("ORDER_SERVICE_URL", "http://127.0.0.1:8081")),
                URI.create(env("INVENTORY_SERVICE_URL", "http://127.0.0.1:8082")),
                new Database(jdbc + "orders", "order_service", required("ORDER_DB_PASSWORD")),
                new Database(jdbc + "inventory", "inventory_service", required("INVENTORY_DB_PASSWORD")),
                env("RELAY_SOURCE_SLOT", "outbox_relay"),
                env("INVENTORY_RELAY_SOURCE_SLOT", "outbox_relay_inventory"),
                new Broker(env("RABBITMQ_HOST", "127.0.0.1"), Integer.parseInt(env("RABBITMQ_PORT", "5672")), "/",
                        required("RABBITMQ_ADMIN_USER"), required("RABBITMQ_ADMIN_PASSWORD"),
                        URI.create("http://" + env("RABBITMQ_HOST", "127.0.0.1") + ":" + env("RABBITMQ_MANAGEMENT_PORT", "15672"))));
    }

    private int integer(String option) {
        return Integer.parseInt(options.get(option));
    }

    private void waitUntil(long atMillis) {
        for (long left = atMillis - elapsedMillis(); left > 0; left = atMillis - elapsedMillis()) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(left));
        }
    }

    private static void pause(long millis) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis)); // an outage's length, not a wait for a condition
    }

    private long elapsedMillis() {
        return (System.nanoTime() - started) / 1_000_000;
    }

    private static void say(String format, Object... args) {
        System.out.printf("[chaos %6.1f s] %s%n", (System.nanoTime() - START) / 1e9, args.length == 0 ? format : format.formatted(args));
        System.out.flush();
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(name + " is not set (deploy/chaos/run reads it from .env)");
        }
        return value;
    }
}
