package dev.outboxinbox.chaos;

import dev.outboxinbox.events.Topology;
import dev.outboxinbox.system.Broker;
import dev.outboxinbox.system.Database;
import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.system.PipelineFigures;
import dev.outboxinbox.system.SystemUnderTest;
import dev.outboxinbox.system.VerificationReport;
import dev.outboxinbox.system.Verifier;
import dev.outboxinbox.testing.OperationsAuth;
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

    static final Map<String, Map<String, String>> PROFILES = Map.of(
            // Fits CI: about 40 s of load, one of every fault that matters, and some of the edge cases.
            "short", Map.ofEntries(Map.entry("orders", "1200"), Map.entry("rate", "30"), Map.entry("broker-restarts", "2"),
                    Map.entry("broker-node-restarts", "0"), Map.entry("kills", "1"), Map.entry("postgres-restarts", "1"),
                    Map.entry("broker-down-while-relay-starts", "1"), Map.entry("poison", "1"), Map.entry("republish", "1"),
                    Map.entry("slot-recreations", "1"), Map.entry("relay-fresh-starts", "0"), Map.entry("foreign-messages", "1"),
                    Map.entry("inventory-db-refusals", "1"), Map.entry("inventory-db-outages", "0"),
                    Map.entry("binding-removals", "0"), Map.entry("second-inventory", "0"),
                    Map.entry("relay-takeovers", "0"), Map.entry("consumer-scaling", "0"), Map.entry("double-kills", "0"),
                    Map.entry("relay-freezes", "0"), Map.entry("relay-session-ends", "0"), Map.entry("inventory-freezes", "1"),
                    Map.entry("slow-stops", "0"), Map.entry("postgres-restarts-with-standbys", "0"),
                    Map.entry("refused-exchanges", "1"), Map.entry("declaration-failures", "1")),
            // The issues' run: ten broker restarts and more, three kills of each service, every edge case.
            "full", Map.ofEntries(Map.entry("orders", "12000"), Map.entry("rate", "40"), Map.entry("broker-restarts", "10"),
                    Map.entry("broker-node-restarts", "2"), Map.entry("kills", "3"), Map.entry("postgres-restarts", "2"),
                    Map.entry("broker-down-while-relay-starts", "2"), Map.entry("poison", "2"), Map.entry("republish", "2"),
                    Map.entry("slot-recreations", "1"), Map.entry("relay-fresh-starts", "1"), Map.entry("foreign-messages", "2"),
                    Map.entry("inventory-db-refusals", "1"), Map.entry("inventory-db-outages", "1"),
                    Map.entry("binding-removals", "1"), Map.entry("second-inventory", "1"),
                    Map.entry("relay-takeovers", "2"), Map.entry("consumer-scaling", "2"), Map.entry("double-kills", "2"),
                    Map.entry("relay-freezes", "2"), Map.entry("relay-session-ends", "2"), Map.entry("inventory-freezes", "1"),
                    Map.entry("slow-stops", "2"), Map.entry("postgres-restarts-with-standbys", "1"),
                    Map.entry("refused-exchanges", "2"), Map.entry("declaration-failures", "1")),
            // The negative controls' run (CI's): only what makes each safeguard matter. Copies for deduplication
            // (a republish of delivered events, a kill -9 of each service); cancellations sent at once for order
            // (the load's share). About half the short run's time; a control on the short or full run is --short/--full.
            "control", onlyCopies(Map.of("orders", "600", "rate", "30", "kills", "1", "republish", "1")),
            // A rolling deploy's run (--rolling-deploy): the upgrade's steps among broker restarts, a kill -9 of each
            // service and poison; about a minute of load. Its own faults only, so that each step is the upgrade's.
            "rolling", onlyCopies(Map.of("orders", "1500", "rate", "30", "broker-restarts", "2", "kills", "1", "poison", "1")));

    /** No fault at all but those given: every fault's option, 0, then the given ones. */
    private static Map<String, String> onlyCopies(Map<String, String> given) {
        Map<String, String> profile = new LinkedHashMap<>();
        for (Schedule.Fault fault : Schedule.Fault.values()) {
            if (fault.option != null) {
                profile.put(fault.option, "0");
            }
        }
        profile.putAll(given);
        return Map.copyOf(profile);
    }

    /** The negative controls: a consumer with one safeguard switched off, which the verifier must catch. */
    static final List<String> NEGATIVE_CONTROLS = List.of("deduplication", "order");

    private static final long START = System.nanoTime();

    private final Map<String, String> options;
    /** When the load started: the schedule's steps count from it. */
    private long started = System.nanoTime();
    private final AtomicReference<String> now = new AtomicReference<>("load starting");
    private final AtomicReference<OrderLoad.Progress> progress = new AtomicReference<>();

    private ChaosRun(Map<String, String> options) {
        this.options = options;
    }

    public static void main(String[] args) throws Exception {
        List<String> given = List.of(args);
        // A rolling deploy runs on its own profile unless one is named.
        boolean rollingDeploy = given.contains("--rolling-deploy") && PROFILES.keySet().stream().noneMatch(p -> given.contains("--" + p));
        Map<String, String> options = new LinkedHashMap<>(PROFILES.get(rollingDeploy ? "rolling" : "short"));
        options.putAll(Map.of("target", "local", "seed", "1", "convergence-bound", "PT3M", "republish-count", "20",
                "refused-count", "3", "cancel-share", "0.2", "rolling-deploy", "none"));
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
                // --negative-control [deduplication|order]: bare, deduplication (what it always was).
                String control = i + 1 < given.size() && !given.get(i + 1).startsWith("--") ? given.get(++i) : "deduplication";
                if (!NEGATIVE_CONTROLS.contains(control)) {
                    throw new IllegalArgumentException("--negative-control " + control + ": one of " + NEGATIVE_CONTROLS);
                }
                options.put(key, control);
            } else if (options.containsKey(key) || key.equals("report") || key.equals("attempts")) {
                if (i + 1 >= given.size()) {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                options.put(key, given.get(++i));
            } else {
                throw new IllegalArgumentException("unknown option " + arg + "; options: --short, --full, --control,"
                        + " --negative-control [deduplication|order], --report, --attempts, --" + String.join(", --", options.keySet()));
            }
        }
        double cancelShare = Double.parseDouble(options.get("cancel-share"));
        if (!(cancelShare >= 0 && cancelShare <= 1)) {
            throw new IllegalArgumentException("--cancel-share " + options.get("cancel-share") + ": a share between 0 and 1");
        }
        if (!options.get("rolling-deploy").equals("none")) {
            RollingDeploy.Order.named(options.get("rolling-deploy")); // producer-first or consumers-first, or refused here
            // Those faults start and stop a second or third inventory-service of their own: not while the deploy has its two.
            for (String fault : List.of("second-inventory", "consumer-scaling", "double-kills", "slow-stops",
                    "postgres-restarts-with-standbys", "inventory-freezes", "declaration-failures")) {
                if (!options.get(fault).equals("0")) {
                    throw new IllegalArgumentException("--rolling-deploy runs its own two inventory-service instances: not with --"
                            + fault + " " + options.get(fault) + " (leave the profile out, or set it to 0)");
                }
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
        double cancelShare = Double.parseDouble(options.get("cancel-share"));
        String negativeControl = options.get("negative-control"); // null, "deduplication" or "order"
        Duration bound = Duration.parse(options.get("convergence-bound"));
        SystemUnderTest system = system();
        Verifier verifier = new Verifier(system);
        Injections injections = new Injections(system, seed);

        Map<String, Integer> counts = new LinkedHashMap<>();
        for (Schedule.Fault fault : Schedule.Fault.values()) {
            if (fault.option != null) {
                counts.put(fault.option, integer(fault.option));
            }
        }
        long loadMillis = (long) (orders / rate * 1000);
        Schedule schedule = Schedule.of(counts, loadMillis, seed);
        rolling = RollingDeploy.of(options.get("rolling-deploy"));
        if (rolling != null) {
            schedule = schedule.with(rolling.steps(loadMillis));
        }
        say("target %s, seed %d, %d orders at %.0f/s (a share of %.2f cancelled), %d faults%s", options.get("target"), seed, orders, rate,
                cancelShare, schedule.steps().size(), negativeControl == null ? ""
                        : negativeControl.equals("order") ? ", NEGATIVE CONTROL: inventory-service applies each batch out of order"
                        : ", NEGATIVE CONTROL: inventory-service runs without deduplication");
        if (rolling != null) {
            say("%s", rolling.describe());
        }
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
                relays(), Duration.ofSeconds(2));

        if (rolling != null) {
            beforeTheUpgrade(target, system);
        }
        // Stock before the load: on hand never changes, reserved must end as the sum of the live orders' lines.
        Map<String, Integer> initialOnHand = verifier.onHand();
        OrderLoad load = new OrderLoad(system.orderService(), "chaos-" + seed + "-" + System.currentTimeMillis(), seed,
                Integer.parseInt(options.getOrDefault("attempts", "8"))).cancelling(cancelShare);
        started = System.nanoTime();
        CompletableFuture<List<OrderLoad.Request>> requests = CompletableFuture.supplyAsync(() -> load.run(orders, rate, progress::set));

        List<String> timeline = Collections.synchronizedList(new ArrayList<>());
        boolean harnessFailed = false;
        try {
            for (Schedule.Step step : schedule.steps()) {
                waitUntil(step.atMillis());
                long begin = elapsedMillis();
                now.set("fault: " + step.fault().description);
                try {
                    inject(step, target, injections, system);
                    String line = "%6.1f s  %-40s %5.1f s".formatted(begin / 1000.0, step.fault().description, (elapsedMillis() - begin) / 1000.0);
                    timeline.add(line);
                    say("fault done: %s", line.trim());
                } catch (FaultObserved e) {
                    // Injected, and the fault itself saw the system fail (not a verdict the verifier could reach from the databases).
                    faultFailures.add(step.fault().description + ": " + e.getMessage());
                    timeline.add("%6.1f s  %s FAILED: %s".formatted(begin / 1000.0, step.fault().description, e.getMessage()));
                    say("FAILED during %s: %s", step.fault().description, e.getMessage());
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
            // The refused exchange's events are expected parked (GET /parked), every other event delivered.
            Verifier.Expected expected = new Verifier.Expected(injections.poison(), injections.refused(), initialOnHand);
            Verifier.Settling settling = verifier.awaitConvergence(endOfLoad, expected, bound, ChaosRun::say);
            VerificationReport report = verifier.verify(placed, expected, target.duplicatesAbsorbed(), settling, bound)
                    .withFaults(timeline);
            reporter.shutdownNow();
            figures.close();

            System.out.println();
            System.out.println("== chaos report (seed " + seed + ", " + injections.republished() + " events republished, "
                    + injections.poison().size() + " poison messages, " + injections.refused().size() + " events for a refused exchange) ==");
            System.out.print(report.toText());
            faultFailures.forEach(failure -> System.out.println("FAILED during a fault: " + failure));
            // Not a verdict either: what an operator's dashboard would have shown through the faults.
            System.out.print(figures.toText());
            // Not a verdict: each recovery republished the outbox table (its copies are in "duplicates absorbed").
            List<String> recoveries = target.relayRecoveries();
            System.out.println("relay recoveries     " + recoveries.size() + " (the slot could not hold every event: first start,"
                    + " slot dropped or remade)");
            recoveries.forEach(line -> System.out.println("    " + line.replaceFirst(".*Recovery done: ", "")));
            Path json = Path.of(options.getOrDefault("report", root.resolve("deploy/chaos/reports/chaos-" + options.get("target")
                    + "-seed" + seed + (negativeControl == null ? "" : "-negative-control" + (negativeControl.equals("order") ? "-order" : ""))
                    + ".json").toString()));
            Files.createDirectories(json.toAbsolutePath().getParent());
            Map<String, Object> extra = new LinkedHashMap<>();
            extra.put("figures", figures.summary());
            extra.put("settings", Map.of("cancelShare", cancelShare, "negativeControl", negativeControl == null ? "none" : negativeControl));
            extra.put("refusedEvents", injections.refused());
            extra.put("faultFailures", List.copyOf(faultFailures));
            // Held: a v2 event at an instance that read v1 only, waiting for an upgraded one (never a dead letter:
            // the verifier found none but the poison). Consumers first, none may be; producer first, some must be.
            long held = rolling == null ? 0 : target.heldByInventory();
            if (rolling != null) {
                extra.put("rollingDeploy", Map.of("order", rolling.order().name(), "heldForTheirVersion", held,
                        "v1DeadLettersRedelivered", RollingDeploy.DEAD_LETTERED_ORDERS));
            }
            Files.writeString(json, report.toJson(extra));
            say("report written to %s", json);

            if (harnessFailed) {
                say("HARNESS ERROR: a fault could not be injected; the run proves nothing either way");
                return 2;
            }
            if ("deduplication".equals(negativeControl)) {
                if (!report.passed() && report.duplicateEffects() > 0) {
                    say("NEGATIVE CONTROL PASSED: with deduplication off, the verifier reported %d duplicate effect(s), as it must",
                            report.duplicateEffects());
                    return 0;
                }
                say("NEGATIVE CONTROL FAILED: deduplication was off and the verifier saw no duplicate effect; it cannot be trusted");
                return 1;
            }
            if ("order".equals(negativeControl)) {
                long reordered = report.reordered();
                if (!report.passed() && reordered > 0) {
                    say("NEGATIVE CONTROL PASSED: with each batch applied in reverse, the verifier reported %d reordered order(s), as it must",
                            reordered);
                    return 0;
                }
                say("NEGATIVE CONTROL FAILED: batches were applied out of order and the verifier saw no reordering; it cannot be trusted");
                return 1;
            }
            if (rolling != null) {
                System.out.println("held for a version  " + held + " (a v2 event at an inventory-service instance that read v1 only,"
                        + " waiting for an upgraded one)");
                if (rolling.order() == RollingDeploy.Order.CONSUMERS_FIRST && held > 0) {
                    say("FAILED: consumers first, yet %d event(s) waited for a consumer that reads their version", held);
                    return 1;
                }
                if (rolling.order() == RollingDeploy.Order.PRODUCER_FIRST && held == 0) {
                    say("HARNESS ERROR: producer first, yet no v2 event met a consumer that read v1 only: the run proved nothing");
                    return 2;
                }
            }
            if (!faultFailures.isEmpty()) {
                say("FAILED: %d fault(s) saw the system fail while they ran (above)", faultFailures.size());
                return 1;
            }
            return report.passed() ? 0 : 1;
        } finally {
            endOfRun(target);
        }
    }

    /** The extra instances a fault left frozen on purpose (a node lost), killed once the run is verified. */
    private final List<Target.Extra> frozenUntilTheEnd = Collections.synchronizedList(new ArrayList<>());
    /** What faults saw fail while they ran (leaked connections …): each fails the run. */
    private final List<String> faultFailures = Collections.synchronizedList(new ArrayList<>());

    /** A fault was injected and saw the system misbehave: the run fails (not a harness error). */
    static final class FaultObserved extends RuntimeException {
        FaultObserved(String message) {
            super(message);
        }
    }

    /** No frozen process survives a run: every instance left frozen is killed (SIGKILL works on a stopped process). */
    private void endOfRun(Target target) {
        if (rolling != null) {
            afterTheDeploy(target);
        }
        synchronized (frozenUntilTheEnd) {
            for (Target.Extra extra : frozenUntilTheEnd) {
                try {
                    target.stopExtra(extra, true);
                    say("%s, frozen since its fault, killed (kill -9) at the end of the run", extra.instance);
                } catch (RuntimeException e) {
                    say("could not kill the frozen %s: %s", extra.instance, e.getMessage());
                }
            }
            frozenUntilTheEnd.clear();
        }
    }

    private void inject(Schedule.Step step, Target target, Injections injections, SystemUnderTest system) throws Exception {
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
            // The deduplication control copies only applied events: a copy that races its original is absorbed by the order's key.
            case REPUBLISH -> injections.republish(Integer.parseInt(options.get("republish-count")),
                    "deduplication".equals(options.get("negative-control")));
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
            case RELAY_FREEZE -> relayFreeze(target);
            case RELAY_SESSION_ENDED -> relaySessionEnded(target);
            case INVENTORY_FROZEN_MID_TRANSACTION -> inventoryFrozenMidTransaction(target, system);
            case SLOW_STOP -> slowStop(target, system);
            case POSTGRES_RESTART_WITH_STANDBYS -> postgresRestartWithStandbys(target);
            case REFUSED_EXCHANGE -> say("%s: outbox rows written for exchange %s (the relay's user may not configure it)",
                    injections.writeRefusedEvents(target, integer("refused-count")), Injections.REFUSED_EXCHANGE);
            case DECLARATION_FAILURE -> declarationFailure(target, injections, system, outage);
            case UPGRADE_ORDER_SERVICE -> upgrade(target, "order-service", system.orderService());
            case UPGRADE_INVENTORY -> upgrade(target, "inventory-service", system.inventoryService());
            case UPGRADE_SECOND_INVENTORY -> {
                target.javaOptions(Target.Extra.SECOND_INVENTORY.instance, "");
                target.stopExtra(Target.Extra.SECOND_INVENTORY, false);
                secondInventoryTakesItsShare(target);
            }
            case REDELIVER_V1_DEAD_LETTERS -> redeliverV1DeadLetters(target, system);
        }
    }

    /** The rolling deploy of this run, or null. */
    private RollingDeploy rolling;

    /**
     * Before the load, as before the upgrade: order-service writes OrderCreated v1, two inventory-service instances
     * read v1 only. Then a rule refuses {@link RollingDeploy#SKU}'s reservations while orders of it are placed:
     * their v1 events are dead-lettered with the rule's words, to be sent back once every instance reads v2.
     */
    private void beforeTheUpgrade(Target target, SystemUnderTest system) throws Exception {
        target.javaOptions("order-service", RollingDeploy.WRITES_V1);
        target.javaOptions("inventory-service", RollingDeploy.READS_V1_ONLY);
        target.javaOptions(Target.Extra.SECOND_INVENTORY.instance, RollingDeploy.READS_V1_ONLY);
        for (String service : List.of("order-service", "inventory-service")) {
            target.stop(service);
            target.start(service);
        }
        target.ensureRunning();
        secondInventoryTakesItsShare(target);
        target.superuserSql("inventory", "INSERT INTO products (sku, name, on_hand) VALUES ('" + RollingDeploy.SKU
                + "', 'the rolling deploy''s dead letters', 100) ON CONFLICT (sku) DO NOTHING");
        target.superuserSql("inventory", """
                CREATE OR REPLACE FUNCTION chaos_refuse_rolling_sku() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION '%s' USING ERRCODE = '23514'; END $$;
                DROP TRIGGER IF EXISTS chaos_refuse_rolling_sku ON reservations;
                CREATE TRIGGER chaos_refuse_rolling_sku BEFORE INSERT ON reservations FOR EACH ROW
                    WHEN (NEW.sku = '%s') EXECUTE FUNCTION chaos_refuse_rolling_sku();
                """.formatted(RollingDeploy.REFUSAL, RollingDeploy.SKU));
        for (int i = 0; i < RollingDeploy.DEAD_LETTERED_ORDERS; i++) {
            HttpResponse<String> placed = HTTP.send(HttpRequest.newBuilder(system.orderService().resolve("/orders"))
                    .header("Content-Type", "application/json").header("Idempotency-Key", "chaos-rolling-" + START + "-" + i)
                    .timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"customerId\": \"chaos-rolling-deploy\", \"lines\": [{\"sku\": \""
                            + RollingDeploy.SKU + "\", \"quantity\": 1}]}")).build(), HttpResponse.BodyHandlers.ofString());
            if (placed.statusCode() != 201) {
                throw new IllegalStateException("an order of " + RollingDeploy.SKU + " was not placed: " + placed.statusCode() + " " + placed.body());
            }
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (deadLettersRefused(system) < RollingDeploy.DEAD_LETTERED_ORDERS) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the orders of " + RollingDeploy.SKU + " were not dead-lettered within a minute");
            }
            pause(500);
        }
        say("before the upgrade: order-service writes v1, two inventory-service instances read v1 only; %d v1 events of %s"
                + " dead-lettered (\"%s\")", RollingDeploy.DEAD_LETTERED_ORDERS, RollingDeploy.SKU, RollingDeploy.REFUSAL);
    }

    /** Dead letters in inventory's queue whose reason is the rolling deploy's rule. */
    private static long deadLettersRefused(SystemUnderTest system) throws Exception {
        HttpResponse<String> letters = HTTP.send(HttpRequest.newBuilder(system.inventoryService().resolve("/dead-letters"))
                .header("Authorization", OperationsAuth.operator()).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        if (letters.statusCode() != 200) {
            return 0; // inventory-service starting: asked again
        }
        return Pattern.compile(Pattern.quote(RollingDeploy.REFUSAL)).matcher(letters.body()).results().count();
    }

    /** One service's upgrade: stopped (SIGTERM: it finishes what it holds), started without its "before" switch, ready. */
    private static void upgrade(Target target, String service, URI url) {
        long started = System.nanoTime();
        target.javaOptions(service, "");
        target.stop(service);
        target.start(service);
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (!ready(url)) {
            if (System.nanoTime() > deadline) {
                throw new FaultObserved(service + " not ready 2 minutes after its upgrade");
            }
            pause(250);
        }
        say("%s upgraded and ready %.1f s after its stop", service, (System.nanoTime() - started) / 1e9);
    }

    /** Every instance reads v2 now: the rule goes, and the v1 events it had dead-lettered are sent back, to be read. */
    private static void redeliverV1DeadLetters(Target target, SystemUnderTest system) throws Exception {
        target.superuserSql("inventory", "DROP TRIGGER IF EXISTS chaos_refuse_rolling_sku ON reservations");
        HttpResponse<String> sent = HTTP.send(HttpRequest.newBuilder(system.inventoryService().resolve("/dead-letters/redeliver?reason="
                        + java.net.URLEncoder.encode(RollingDeploy.REFUSAL, java.nio.charset.StandardCharsets.UTF_8)))
                .header("Authorization", OperationsAuth.operator()).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        if (sent.statusCode() != 200) {
            throw new FaultObserved("POST /dead-letters/redeliver answered " + sent.statusCode() + ": " + sent.body());
        }
        long count = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-").matcher(sent.body()).results().count();
        if (count != RollingDeploy.DEAD_LETTERED_ORDERS) {
            throw new FaultObserved("sent back " + count + " dead letters of " + RollingDeploy.SKU + ", not "
                    + RollingDeploy.DEAD_LETTERED_ORDERS + ": " + sent.body());
        }
        say("the rule gone, %d v1 dead letters sent back to the upgraded consumers", count);
    }

    /** However the run ended: every service as after the upgrade (no "before" switch), the second instance stopped. */
    private void afterTheDeploy(Target target) {
        try {
            for (String service : List.of("order-service", "inventory-service")) {
                if (!target.javaOptions.getOrDefault(service, "").isEmpty()) {
                    target.javaOptions(service, "");
                    target.stop(service);
                    target.start(service);
                    say("%s restarted as after the upgrade (the run ended before its step)", service);
                }
            }
            target.stopExtra(Target.Extra.SECOND_INVENTORY, false);
        } catch (RuntimeException e) {
            say("could not end the rolling deploy cleanly: %s", e.getMessage());
        }
    }

    /**
     * A standby relay joins; the leader is killed and the standby must take the slot's lock; the killed
     * one comes back (as standby now) and the standby, leading, is killed in turn: the first takes over
     * again. The lock is watched in PostgreSQL (the standby's lock session is named after it), the
     * first relay through its readiness (its {@code role}).
     */
    private void relayTakeover(Target target, long outage) {
        withStandbyRelay(target, (standby, walsender) -> {
            target.kill("outbox-relay");
            long killed = System.nanoTime();
            awaitSql(target, "the standby relay holding the slot's lock", Duration.ofMinutes(1), RELAY_LOCK_HOLDER, standby);
            say("the standby relay took the lock %.1f s after the leader was killed", (System.nanoTime() - killed) / 1e9);
            pause(outage);
            target.start("outbox-relay");
            awaitRelayRole("standby", Duration.ofMinutes(2));
            pause(2_000);
        });
    }

    /**
     * The leader frozen (SIGSTOP) past its lease while a standby waits: a node that stops answering without
     * closing its sockets. The standby must take the slot's lock once PostgreSQL ends the silent session
     * (the lease, RELAY_LEADERSHIP_LEASE), the frozen one is woken lease + 10 s after it froze and must step
     * down (ready as standby) and let go of the slot, so that the standby streams; then back to one relay.
     */
    private void relayFreeze(Target target) {
        Duration lease = Duration.parse(env("RELAY_LEADERSHIP_LEASE", "PT10S"));
        withStandbyRelay(target, (standby, walsender) -> {
            target.signal("outbox-relay", "STOP");
            boolean frozen = true;
            try {
                long stopped = System.nanoTime();
                awaitSql(target, "the standby relay holding the slot's lock while the leader is frozen", lease.plusMinutes(1),
                        RELAY_LOCK_HOLDER, standby);
                say("outbox-relay frozen (SIGSTOP): the standby holds the slot's lock %.1f s later (lease %d s)",
                        (System.nanoTime() - stopped) / 1e9, lease.toSeconds());
                pause(lease.plusSeconds(10).toMillis() - (System.nanoTime() - stopped) / 1_000_000);
                target.signal("outbox-relay", "CONT");
                frozen = false;
                long woken = System.nanoTime();
                awaitRelayRole("standby", Duration.ofMinutes(1));
                say("outbox-relay woken (SIGCONT) %.1f s after it froze: ready as standby %.1f s later",
                        (woken - stopped) / 1e9, (System.nanoTime() - woken) / 1e9);
                standbyStreams(target, walsender, woken, "the old leader was woken");
            } finally {
                if (frozen) {
                    target.signal("outbox-relay", "CONT");
                }
            }
        });
    }

    /**
     * The leader's lock session ended (pg_terminate_backend, as a network cut of that one connection or an
     * operator would) while its replication connection lives on: the standby takes the lock at its next ask,
     * and the deposed leader must step down and let go of the slot (its walsender) so that the standby
     * streams. Then back to one relay: the standby killed, the first leads again.
     */
    private void relaySessionEnded(Target target) {
        withStandbyRelay(target, (standby, walsender) -> {
            String ended = target.superuserSql("postgres", RELAY_LOCK_HOLDER.replace("SELECT a.application_name",
                    "SELECT a.application_name || ' (pid ' || a.pid || '): ' || pg_terminate_backend(a.pid)")).trim();
            long cut = System.nanoTime();
            awaitSql(target, "the standby relay holding the slot's lock after the leader's session ended", Duration.ofMinutes(1),
                    RELAY_LOCK_HOLDER, standby);
            boolean streamAlive = !target.superuserSql("postgres", "SELECT count(*) FROM pg_stat_activity WHERE pid = "
                    + (walsender.isEmpty() ? "0" : walsender)).trim().equals("0");
            say("the leader's lock session ended (%s), its walsender (pid %s) %s: the standby holds the lock %.1f s later",
                    ended, walsender, streamAlive ? "still streaming" : "gone already", (System.nanoTime() - cut) / 1e9);
            awaitRelayRole("standby", Duration.ofMinutes(1));
            say("the deposed leader is ready as standby %.1f s after its session ended", (System.nanoTime() - cut) / 1e9);
            standbyStreams(target, walsender, cut, "the leader's session ended");
        });
    }

    /** What a relay fault does to the leader while a standby waits: it returns once the standby streams. */
    private interface LeaderFault {
        void inject(String standbySession, String leadersWalsender);
    }

    /**
     * Once outbox-relay leads, a standby relay is started beside it; once the standby's lock session is
     * there, the fault is injected to the leader (given the standby's session name and the walsender that
     * streams the slot now). Then back to one relay: the standby killed, the first must lead again.
     * The standby never outlives the fault. (The standby joins only after the leader leads: started
     * together, as after a kill of outbox-relay just before, the standby could take the lock first.)
     */
    private void withStandbyRelay(Target target, LeaderFault fault) {
        String standby = "outbox-relay/" + Target.Extra.STANDBY_RELAY.instance;
        awaitRelayRole("leader", Duration.ofMinutes(2));
        target.startExtra(Target.Extra.STANDBY_RELAY);
        boolean standbyRunning = true;
        try {
            awaitSql(target, "the standby relay's lock session", Duration.ofMinutes(2),
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + standby + "'");
            fault.inject(standby, slotWalsender(target));
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

    /** The pid of the walsender that streams outbox-relay's slot now ("" if none). */
    private static String slotWalsender(Target target) {
        return target.superuserSql("orders", "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '" + relaySlot() + "'").trim();
    }

    /** Until another walsender than the deposed leader's streams the slot: the leader let go, the standby reads. */
    private static void standbyStreams(Target target, String deposedWalsender, long since, String sinceWhat) {
        awaitSql(target, "another walsender on slot " + relaySlot() + " than the deposed leader's (pid " + deposedWalsender + ")",
                Duration.ofMinutes(2), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + relaySlot()
                        + "' AND active_pid IS NOT NULL AND active_pid <> " + (deposedWalsender.isEmpty() ? "0" : deposedWalsender));
        say("the standby streams the slot %.1f s after %s", (System.nanoTime() - since) / 1e9, sinceWhat);
    }

    /** The session that holds outbox-relay's slot lock (its leader), by application_name; nothing if none. */
    private static final String RELAY_LOCK_HOLDER = "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            + " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND a.datname = 'outbox_relay'"
            + " AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('outbox-relay:" + relaySlot() + "', 0)";

    /** A SKU every load orders and the first in the batch's lock order (FOR UPDATE … ORDER BY sku). */
    private static final String ROW_LOCK_SKU = "SKU-APPLE";

    /**
     * A node lost without closing its sockets, mid-transaction: a third inventory-service joins and takes its
     * partitions; the fault holds a product row lock (its own transaction, SELECT … FOR UPDATE) and places
     * orders of that SKU until a batch of the third waits on it; then freezes the third (SIGSTOP) and lets the
     * row go 2 s later, so the frozen instance's transaction takes the rows and stays open, its client never
     * answering. It is never woken: it is killed once the run is verified. The first instance must take every
     * partition (after the lease) and apply every later order, which the verifier's convergence bound checks.
     */
    private void inventoryFrozenMidTransaction(Target target, SystemUnderTest system) throws Exception {
        Target.Extra third = Target.Extra.THIRD_INVENTORY;
        long started = System.nanoTime();
        target.startExtra(third);
        boolean running = true;
        try {
            awaitPartitionLocks(target, "the third inventory-service reading its share", Duration.ofMinutes(2),
                    "= '" + INVENTORY_SESSIONS + third.instance + "'", PARTITIONS / 2);
            say("the third inventory-service reads %d of %d partitions %.1f s after it started", PARTITIONS / 2, PARTITIONS,
                    (System.nanoTime() - started) / 1e9);
            String waiting;
            long frozenAt;
            try (RowLock lock = new RowLock(system, ROW_LOCK_SKU); Nudger nudger = new Nudger(system.orderService(), ROW_LOCK_SKU)) {
                waiting = awaitWaitingOn(target, third, lock.pid, Duration.ofMinutes(1));
                target.signal(third.instance, "STOP");
                frozenUntilTheEnd.add(third);
                running = false;
                frozenAt = System.nanoTime();
                say("%s frozen (SIGSTOP) while its transaction(s) %s waited on %s's row (%d orders of it placed meanwhile)",
                        third.instance, waiting, ROW_LOCK_SKU, nudger.placed());
                pause(2_000);
            }
            long released = System.nanoTime();
            String frozenTransactions = "SELECT count(*) FROM pg_stat_activity WHERE (pid || '@' || xact_start) IN ('"
                    + waiting.replace(",", "','") + "')";
            String allSix = "SELECT count(*) = " + PARTITIONS + " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    + " WHERE l.locktype = 'advisory' AND l.granted AND a.datname = 'inventory' AND a.application_name " + FIRST_INVENTORY;
            Duration lease = Duration.parse(env("INBOX_PARTITIONING_LEASE", "PT10S"));
            long deadline = frozenAt + lease.plusSeconds(50).toNanos();
            long partitionsAt = -1;
            long transactionEndedAt = -1;
            while (System.nanoTime() < deadline && (partitionsAt < 0 || transactionEndedAt < 0)) {
                if (partitionsAt < 0 && target.superuserSql("postgres", allSix).trim().equals("t")) {
                    partitionsAt = System.nanoTime();
                }
                if (transactionEndedAt < 0 && target.superuserSql("postgres", frozenTransactions).trim().equals("0")) {
                    transactionEndedAt = System.nanoTime();
                }
                pause(200);
            }
            String bound = "not within %d s".formatted(lease.plusSeconds(50).toSeconds());
            say("after the freeze: the first inventory-service reads all %d partitions %s; the frozen transaction ended %s"
                            + " (the row was let go %.1f s after the freeze)", PARTITIONS,
                    partitionsAt < 0 ? bound : "%.1f s later".formatted((partitionsAt - frozenAt) / 1e9),
                    transactionEndedAt < 0 ? bound : "%.1f s after the freeze".formatted((transactionEndedAt - frozenAt) / 1e9),
                    (released - frozenAt) / 1e9);
            if (partitionsAt < 0) {
                throw new FaultObserved("the first inventory-service did not read all " + PARTITIONS + " partitions within "
                        + lease.plusSeconds(50).toSeconds() + " s of the third's freeze");
            }
        } finally {
            if (running) {
                target.stopExtra(third, true);
            }
        }
    }

    /**
     * A graceful stop while the database is slow: a second inventory-service joins and takes its share; the
     * fault holds a product row lock for 15 s and places orders of that SKU until a batch of the second waits
     * on it; then SIGTERM, and the fault waits until the process has exited (it finishes or gives back what it
     * holds). The first must read all six partitions again.
     */
    private void slowStop(Target target, SystemUnderTest system) throws Exception {
        Target.Extra second = Target.Extra.SECOND_INVENTORY;
        secondInventoryTakesItsShare(target);
        boolean running = true;
        try {
            long signalled;
            CompletableFuture<Void> stopping;
            long locked = System.nanoTime();
            try (RowLock lock = new RowLock(system, ROW_LOCK_SKU); Nudger nudger = new Nudger(system.orderService(), ROW_LOCK_SKU)) {
                String waiting = "";
                try {
                    waiting = awaitWaitingOn(target, second, lock.pid, Duration.ofSeconds(12));
                } catch (IllegalStateException notYet) {
                    say("no batch of %s waits on the row yet (%s); stopping it anyway", second.instance, notYet.getMessage());
                }
                stopping = CompletableFuture.runAsync(() -> target.stopExtra(second, false));
                running = false;
                signalled = System.nanoTime();
                say("%s stopped (SIGTERM) while its transaction(s) %s waited on %s's row", second.instance,
                        waiting.isEmpty() ? "(none seen)" : waiting, ROW_LOCK_SKU);
                pause(15_000 - (System.nanoTime() - locked) / 1_000_000);
            }
            long released = System.nanoTime();
            try {
                stopping.get(2, TimeUnit.MINUTES);
            } catch (Exception e) {
                target.stopExtra(second, true);
                throw new FaultObserved(second.instance + " did not exit within 2 min of SIGTERM: " + e.getMessage());
            }
            long exited = System.nanoTime();
            awaitPartitionLocks(target, "the first inventory-service reading every partition again", Duration.ofMinutes(1),
                    FIRST_INVENTORY, PARTITIONS);
            say("%s exited %.1f s after SIGTERM (the row was let go %.1f s after it); the first reads all %d partitions %.1f s after the signal",
                    second.instance, (exited - signalled) / 1e9, (released - signalled) / 1e9, PARTITIONS, (System.nanoTime() - signalled) / 1e9);
        } finally {
            if (running) {
                target.stopExtra(second, true);
            }
        }
    }

    /**
     * PostgreSQL restarted while two instances of each run (outbox-relay and its standby, inventory-service and a
     * second): every lock session ends at once. One relay must lead again and the six partitions be read again;
     * then back to one of each.
     */
    private void postgresRestartWithStandbys(Target target) {
        String standby = "outbox-relay/" + Target.Extra.STANDBY_RELAY.instance;
        target.startExtra(Target.Extra.STANDBY_RELAY);
        boolean standbyRunning = true;
        boolean secondRunning = false;
        try {
            secondInventoryTakesItsShare(target);
            secondRunning = true;
            awaitSql(target, "the standby relay's lock session", Duration.ofMinutes(2),
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + standby + "'");
            long restarting = System.nanoTime();
            target.restartPostgres();
            long restarted = System.nanoTime();
            awaitSql(target, "a relay holding the slot's lock after the restart", Duration.ofMinutes(2),
                    "SELECT count(*) FROM (" + RELAY_LOCK_HOLDER + ") holder");
            String leader = target.superuserSql("postgres", RELAY_LOCK_HOLDER).trim();
            long relayBack = System.nanoTime();
            awaitPartitionLocks(target, "the inventory-service instances reading all six partitions after the restart", Duration.ofMinutes(2),
                    "LIKE '" + INVENTORY_SESSIONS + "%'", PARTITIONS);
            say("PostgreSQL restarted in %.1f s with two of each: %s leads %.1f s and the six partitions are read again %.1f s after it was back",
                    (restarted - restarting) / 1e9, leader, (relayBack - restarted) / 1e9, (System.nanoTime() - restarted) / 1e9);
            target.stopExtra(Target.Extra.SECOND_INVENTORY, false);
            secondRunning = false;
            awaitPartitionLocks(target, "the first inventory-service reading every partition again", Duration.ofMinutes(1),
                    FIRST_INVENTORY, PARTITIONS);
            target.stopExtra(Target.Extra.STANDBY_RELAY, true);
            standbyRunning = false;
            awaitRelayRole("leader", Duration.ofMinutes(1));
            say("back to one of each: the first inventory-service reads all %d partitions, outbox-relay leads", PARTITIONS);
        } finally {
            if (secondRunning) {
                target.stopExtra(Target.Extra.SECOND_INVENTORY, true);
            }
            if (standbyRunning) {
                target.stopExtra(Target.Extra.STANDBY_RELAY, true);
            }
        }
    }

    /**
     * A consumer that cannot declare its topology, for a while, under load: inventory-service stopped, its broker
     * user's configure permission revoked (through the management API), started: it must fail to start (not ready)
     * for 11–15 s, and meanwhile hold at most one broker connection (sampled every second; a connection per
     * retry would use up the broker's). Then the permission is restored and it must become ready.
     */
    private void declarationFailure(Target target, Injections injections, SystemUnderTest system, long outage) throws Exception {
        String user = env("INVENTORY_BROKER_USER", "inventory_service");
        List<String> granted = injections.permissions(user);
        target.stop("inventory-service");
        // Connections of that user that are not this instance's (a frozen instance's, until the broker drops it).
        java.util.Set<String> others = injections.connectionsOf(user);
        List<Integer> samples = new ArrayList<>();
        boolean readyWithout = false;
        long failing = 10_000 + outage;
        long started;
        injections.setPermissions(user, List.of("^$", granted.get(1), granted.get(2)));
        long answering;
        try {
            target.start("inventory-service");
            started = System.nanoTime();
            // A JVM start takes a while (25 s on a busy 2-core machine); its consumer connects as its HTTP server
            // opens: the 11–15 s of failing starts count from then.
            while (status(system.inventoryService(), "/q/health/live") < 0) {
                if (System.nanoTime() - started > Duration.ofMinutes(2).toNanos()) {
                    throw new FaultObserved("inventory-service did not answer HTTP within 2 min of its start");
                }
                samples.add(connectionsBesides(injections, user, others));
                pause(1_000);
            }
            answering = System.nanoTime();
            while ((System.nanoTime() - answering) / 1_000_000 < failing) {
                samples.add(connectionsBesides(injections, user, others));
                readyWithout |= ready(system.inventoryService());
                pause(1_000);
            }
        } finally {
            injections.setPermissions(user, granted);
        }
        int failedStartSamples = samples.size();
        long restored = System.nanoTime();
        boolean readyAgain = false;
        while (!readyAgain && System.nanoTime() - restored < Duration.ofMinutes(2).toNanos()) {
            samples.add(connectionsBesides(injections, user, others));
            readyAgain = ready(system.inventoryService());
            pause(readyAgain ? 0 : 1_000);
        }
        int most = samples.stream().mapToInt(Integer::intValue).max().orElse(0);
        say("inventory-service without configure permission for %.1f s (%.1f s since it answered HTTP): broker connections each"
                        + " second %s (%d while it could not declare); %s", (restored - started) / 1e9, (restored - answering) / 1e9,
                samples, failedStartSamples,
                readyAgain ? "ready %.1f s after the permission was restored".formatted((System.nanoTime() - restored) / 1e9)
                        : "NOT ready 2 min after the permission was restored");
        if (readyWithout) {
            throw new FaultObserved("inventory-service was ready although its broker user could not declare its topology");
        }
        if (most > 1) {
            throw new FaultObserved("leaked connections: inventory-service held up to " + most + " broker connections at once while"
                    + " it could not declare its topology (each second: " + samples + ")");
        }
        if (!readyAgain) {
            throw new FaultObserved("inventory-service not ready 2 min after its broker user's permission was restored");
        }
    }

    private static int connectionsBesides(Injections injections, String user, java.util.Set<String> others) throws Exception {
        java.util.Set<String> now = new java.util.TreeSet<>(injections.connectionsOf(user));
        now.removeAll(others);
        return now.size();
    }

    private static boolean ready(URI service) {
        return status(service, "/q/health/ready") == 200;
    }

    /** The HTTP status of a GET, or -1 if nothing answered. */
    private static int status(URI service, String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(service.resolve(path)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (java.io.IOException notAnswering) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /**
     * Until a transaction of this extra inventory-service (its pool's sessions are named after it) waits on the
     * session {@code holder}: directly, or behind another waiter (the first in PostgreSQL's queue for a row waits
     * on the holder's transaction, the next ones on the tuple lock that first waiter holds). Returns them as
     * pid@xact_start, comma-separated.
     */
    private static String awaitWaitingOn(Target target, Target.Extra extra, int holder, Duration atMost) {
        String query = "SELECT coalesce(string_agg(a.pid || '@' || a.xact_start, ','), '') FROM pg_stat_activity a"
                + " WHERE a.application_name = '" + extra.dataSessionName() + "' AND a.wait_event_type = 'Lock'"
                + " AND (" + holder + " = ANY(pg_blocking_pids(a.pid)) OR EXISTS (SELECT 1 FROM pg_stat_activity b"
                + " WHERE b.pid = ANY(pg_blocking_pids(a.pid)) AND " + holder + " = ANY(pg_blocking_pids(b.pid))))";
        long deadline = System.nanoTime() + atMost.toNanos();
        for (String waiting = target.superuserSql("postgres", query).trim(); ; waiting = target.superuserSql("postgres", query).trim()) {
            if (!waiting.isEmpty()) {
                return waiting;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no transaction of " + extra.instance + " waited on the row lock within "
                        + atMost.toSeconds() + " s");
            }
            pause(100);
        }
    }

    /** A product row locked by a transaction of the fault's own (SELECT … FOR UPDATE), until closed (rolled back). */
    private static final class RowLock implements AutoCloseable {

        private final java.sql.Connection connection;
        final int pid;

        RowLock(SystemUnderTest system, String sku) throws java.sql.SQLException {
            connection = system.inventory().connect();
            try (java.sql.Statement sql = connection.createStatement()) {
                sql.execute("SET application_name = 'chaos/row-lock'");
                connection.setAutoCommit(false);
                try (java.sql.ResultSet rs = sql.executeQuery("SELECT pg_backend_pid()")) {
                    rs.next();
                    pid = rs.getInt(1);
                }
                try (java.sql.ResultSet rs = sql.executeQuery("SELECT sku FROM products WHERE sku = '" + sku + "' FOR UPDATE")) {
                    if (!rs.next()) {
                        throw new IllegalStateException("no product " + sku + " in inventory's database");
                    }
                }
            } catch (java.sql.SQLException | RuntimeException e) {
                connection.close();
                throw e;
            }
        }

        @Override
        public void close() throws java.sql.SQLException {
            try {
                connection.rollback();
            } finally {
                connection.close();
            }
        }
    }

    /**
     * Orders of one SKU, one every 250 ms, so that a batch that needs its row is always on its way. Each with an
     * Idempotency-Key of its own: the verifier checks them like any other order (its answer does not matter here).
     */
    private static final class Nudger implements AutoCloseable {

        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "nudge");
            t.setDaemon(true);
            return t;
        });
        private final java.util.concurrent.atomic.AtomicInteger placed = new java.util.concurrent.atomic.AtomicInteger();

        Nudger(URI orderService, String sku) {
            String runId = "chaos-nudge-" + System.currentTimeMillis();
            timer.scheduleAtFixedRate(() -> {
                String key = runId + "-" + placed.incrementAndGet();
                HTTP.sendAsync(HttpRequest.newBuilder(orderService.resolve("/orders")).timeout(Duration.ofSeconds(10))
                        .header("Content-Type", "application/json").header("Idempotency-Key", key)
                        .POST(HttpRequest.BodyPublishers.ofString("{\"customerId\":\"" + key + "\",\"lines\":[{\"sku\":\"" + sku
                                + "\",\"quantity\":1}]}")).build(), HttpResponse.BodyHandlers.discarding());
            }, 0, 250, TimeUnit.MILLISECONDS);
        }

        int placed() {
            return placed.get();
        }

        @Override
        public void close() {
            timer.shutdownNow();
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
    /** The first instance's session, whatever its name (host/pid by default): any but the extra instances'. */
    private static final String FIRST_INVENTORY = "LIKE '" + INVENTORY_SESSIONS + "%' AND a.application_name NOT IN ('"
            + INVENTORY_SESSIONS + Target.Extra.SECOND_INVENTORY.instance + "', '" + INVENTORY_SESSIONS + Target.Extra.THIRD_INVENTORY.instance + "')";
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
                throw new FaultObserved("no " + what + " after " + atMost.toSeconds() + " s");
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
                throw new FaultObserved("outbox-relay not ready as " + role + " after " + atMost.toSeconds() + " s");
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

    /** The relays deploy/local runs, by name: where their /q/metrics are. */
    public static Map<String, URI> relays() {
        return Map.of("outbox-relay", URI.create(env("OUTBOX_RELAY_URL", "http://127.0.0.1:8083")),
                "outbox-relay-inventory", URI.create(env("OUTBOX_RELAY_INVENTORY_URL", "http://127.0.0.1:8084")));
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
