package dev.outboxinbox.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

/**
 * Every figure of one run, with its conditions: a text table (printed, and {@code report.txt}), the
 * same as JSON ({@code report.json}) and a chart ({@code chart.png}).
 */
final class Report {

    /** What the issue asks of the system, checked against this run. */
    static final double PIPELINE_GOAL = 0.50;
    static final double RELAY_GOAL = 1.0;
    static final double INBOX_COST_GOAL = 0.15;

    /** Beside the relay's numbers: what the peer does not do (from its sink's source, RabbitMqStreamChangeConsumer). */
    static final String PEER_DIFFERENCES = """
            What the two relays do differently (Debezium Server 3.6's RabbitMQ sink, RabbitMqStreamChangeConsumer):
              - confirms: it waits for the broker's confirms once per batch (waitForConfirmsOrDie); outbox-relay
                tracks each message's confirm and commits the offset only past confirmed events;
              - mandatory: it publishes without it, so an event no queue is bound for is dropped by the broker and
                its offset committed; outbox-relay publishes mandatory and parks a returned event with its reason;
              - a nack or a confirm timeout throws and stops the server; outbox-relay retries the batch with backoff;
              - both: persistent messages, offsets in PostgreSQL, the same outbox event router, one slot.""";

    record Row(String section, String figure, String value) {
    }

    private final Map<String, Object> conditions;
    private final List<Ceiling.Result> ceilings;
    private final List<Floor.Result> floors;
    private final Pipeline.Result pipeline;
    private final List<RelayPeers.Turn> turns;
    private final List<InboxCost.Round> inbox;

    Report(Map<String, Object> conditions, List<Ceiling.Result> ceilings, List<Floor.Result> floors, Pipeline.Result pipeline,
           List<RelayPeers.Turn> turns, List<InboxCost.Round> inbox) {
        this.conditions = conditions;
        this.ceilings = ceilings;
        this.floors = floors;
        this.pipeline = pipeline;
        this.turns = turns;
        this.inbox = inbox;
    }

    double ceilingTps() {
        return ceilings.stream().mapToDouble(Ceiling.Result::tps).average().orElse(Double.NaN);
    }

    /** The database's floor for the whole pipeline, in orders/s: the mean of its runs. */
    double floorOrdersPerSecond() {
        return floors.stream().mapToDouble(Floor.Result::ordersPerSecond).average().orElse(Double.NaN);
    }

    /** The median over the rounds of one peer's figure. */
    double relay(String peer, ToDoubleFunction<RelayPeers.Turn> figure) {
        return median(turns.stream().filter(t -> t.peer().equals(peer)).mapToDouble(figure).toArray());
    }

    double inboxRate(boolean on) {
        return median(inbox.stream().filter(r -> r.inbox() == on).mapToDouble(InboxCost.Round::messagesPerSecond).toArray());
    }

    private static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    Map<String, Object> ratios() {
        Map<String, Object> ratios = new LinkedHashMap<>();
        ratios.put("pipelineAcceptedOverFloor", round(pipeline.acceptedPerSecond() / floorOrdersPerSecond(), 3));
        ratios.put("pipelineAppliedOverFloor", round(pipeline.appliedPerSecond() / floorOrdersPerSecond(), 3));
        ratios.put("pipelineAcceptedOverCeiling", round(pipeline.acceptedPerSecond() / ceilingTps(), 3));
        ratios.put("pipelineAppliedOverCeiling", round(pipeline.appliedPerSecond() / ceilingTps(), 3));
        ratios.put("relayOverDebeziumServerCold", round(relay(OUR, t -> t.cold().eventsPerSecond())
                / relay(PEER, t -> t.cold().eventsPerSecond()), 3));
        ratios.put("relayOverDebeziumServerWarm", round(relay(OUR, t -> t.warm().eventsPerSecond())
                / relay(PEER, t -> t.warm().eventsPerSecond()), 3));
        ratios.put("inboxOnOverOff", round(inboxRate(true) / inboxRate(false), 3));
        ratios.put("inboxCost", round(1 - inboxRate(true) / inboxRate(false), 3));
        return ratios;
    }

    Map<String, Object> goals() {
        Map<String, Object> ratios = ratios();
        Map<String, Object> goals = new LinkedHashMap<>();
        goals.put("pipeline ≥ 50 % of the database's floor (applied)", met((double) ratios.get("pipelineAppliedOverFloor"), v -> v >= PIPELINE_GOAL));
        goals.put("relay ≥ 1.0× Debezium Server, cold", met((double) ratios.get("relayOverDebeziumServerCold"), v -> v >= RELAY_GOAL));
        goals.put("relay ≥ 1.0× Debezium Server, warm", met((double) ratios.get("relayOverDebeziumServerWarm"), v -> v >= RELAY_GOAL));
        goals.put("inbox costs ≤ 15 %", met((double) ratios.get("inboxCost"), v -> v <= INBOX_COST_GOAL));
        return goals;
    }

    private static String met(double value, Predicate<Double> goal) {
        return Double.isNaN(value) ? "not measured" : goal.test(value) ? "met" : "MISSED";
    }

    static final String OUR = "outbox-relay";
    static final String PEER = "Debezium Server";

    List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < ceilings.size(); i++) {
            Ceiling.Result c = ceilings.get(i);
            rows.add(new Row("ceiling", "pgbench, order-service's transaction before issue 29, %d clients, %d s (%s)".formatted(c.clients(), c.seconds(),
                    i == 0 ? "first" : "last"), "%,.0f tps, %.1f ms average".formatted(c.tps(), c.latencyMs())));
        }
        for (int i = 0; i < floors.size(); i++) {
            Floor.Result f = floors.get(i);
            rows.add(new Row("floor", "pgbench, the pipeline's whole database work, batches of %d, %d clients, %d s (%s)".formatted(
                    f.batch(), f.clients(), f.seconds(), i == 0 ? "first" : "last"),
                    "%,.0f orders/s (%,.0f tps, all transactions; %.0f %% of the orders reserved, %.0f %% decided; %,.0f MiB of WAL decoded)"
                            .formatted(f.ordersPerSecond(), f.tps(), 100 * f.reservedShare(), 100 * f.decidedShare(), f.decodedMib())));
        }
        rows.add(new Row("pipeline", "POST /orders at saturation (wrk), %d in flight, %,d orders".formatted(pipeline.clients(), pipeline.orders()),
                "%,.0f orders/s accepted (none refused: a refusal stops the run)".formatted(pipeline.acceptedPerSecond())));
        rows.add(new Row("pipeline", "applied in inventory (first POST → last decision)", "%,.0f orders/s".formatted(pipeline.appliedPerSecond())));
        rows.add(new Row("pipeline", "replies back in order-service, after inventory's last decision",
                "%.1f s later".formatted(pipeline.repliesDrainedAfterSeconds())));
        rows.add(new Row("pipeline", "pipeline ÷ the database's floor", "%.0f %% accepted, %.0f %% applied".formatted(
                100 * pipeline.acceptedPerSecond() / floorOrdersPerSecond(), 100 * pipeline.appliedPerSecond() / floorOrdersPerSecond())));
        rows.add(new Row("pipeline", "pipeline ÷ pgbench ceiling", "%.0f %% accepted, %.0f %% applied".formatted(
                100 * pipeline.acceptedPerSecond() / ceilingTps(), 100 * pipeline.appliedPerSecond() / ceilingTps())));
        Cpu.Profile cpu = pipeline.cpu();
        rows.add(new Row("cpu", "saturation: CPU used, all parts, over %d cores × %.0f s".formatted(
                (int) conditions.getOrDefault("cores", 0), cpu.elapsedSeconds()), "%.0f %%".formatted(100 * cpu.machineShare())));
        cpu.msPerOrder().forEach((part, ms) -> rows.add(new Row("cpu", "per order: " + part, "%.2f ms".formatted(ms))));
        rows.add(new Row("cpu", "per order: all parts", "%.2f ms".formatted(cpu.msPerOrder().values().stream().mapToDouble(Double::doubleValue).sum())));
        for (Hotspots.Profile profile : pipeline.hotspots()) {
            rows.add(new Row("profile", "%s: where its CPU goes (JFR, %,d samples, %d s at saturation)".formatted(profile.service(),
                    profile.samples(), pipeline.profiledSeconds()), Hotspots.describe(profile.layers(), 6)));
            rows.add(new Row("profile", "%s: hottest methods outside the JDK; GC pauses".formatted(profile.service()),
                    "%s; GC %,.0f ms".formatted(Hotspots.describe(profile.methods(), 4), profile.gcPauseMs())));
        }
        rows.add(new Row("latency", "CPU at %,.0f orders/s (half the saturation rate): the machine, and per order, all parts"
                .formatted(pipeline.latencyRate()), "%.0f %% busy; %.2f ms an order (%s)".formatted(100 * pipeline.latencyCpu().machineShare(),
                pipeline.latencyCpu().msPerOrder().values().stream().mapToDouble(Double::doubleValue).sum(),
                largest(pipeline.latencyCpu().msPerOrder(), 4))));
        pipeline.commitToApplied().forEach((consumer, p) -> rows.add(new Row("latency",
                "commit → applied, %s, at %,.0f orders/s (its histogram)".formatted(consumer, pipeline.latencyRate()),
                "p50 %s ms, p95 %s ms, p99 %s ms (n=%s)".formatted(p.get("p50Ms"), p.get("p95Ms"), p.get("p99Ms"), p.get("n")))));
        pipeline.relayCommitTo().forEach((relay, stages) -> rows.add(new Row("latency",
                "commit → %s, at %,.0f orders/s (its histograms)".formatted(
                        String.join(" / ", stages.keySet()) + ", " + relay, pipeline.latencyRate()),
                "p50 %s ms, p95 %s ms, p99 %s ms".formatted(stage(stages, "p50Ms"), stage(stages, "p95Ms"), stage(stages, "p99Ms")))));
        Percentiles post = pipeline.placedToApplied();
        rows.add(new Row("latency", "placed (order-service) → applied in inventory, at %,.0f orders/s".formatted(pipeline.latencyRate()),
                "p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms (n=%d)".formatted(post.p50(), post.p95(), post.p99(), post.max(), post.n())));
        for (String peer : List.of(OUR, PEER)) {
            rows.add(new Row("relay", "%s, cold: events/s (median of %d)".formatted(peer, turns.stream().filter(t -> t.peer().equals(peer)).count()),
                    "%,.0f events/s, first message %,.0f ms after the process started".formatted(
                            relay(peer, t -> t.cold().eventsPerSecond()), relay(peer, t -> t.cold().firstMessageMs()))));
            rows.add(new Row("relay", "%s, warm".formatted(peer), "%,.0f events/s, first message %,.0f ms after the first commit".formatted(
                    relay(peer, t -> t.warm().eventsPerSecond()), relay(peer, t -> t.warm().firstMessageMs()))));
        }
        Map<String, Object> ratios = ratios();
        rows.add(new Row("relay", "outbox-relay ÷ Debezium Server", "%.2f× cold, %.2f× warm".formatted(
                (double) ratios.get("relayOverDebeziumServerCold"), (double) ratios.get("relayOverDebeziumServerWarm"))));
        for (boolean on : new boolean[] {true, false}) {
            rows.add(new Row("inbox", "inventory-service, inbox %s (median)".formatted(on ? "on" : "off"), "%,.0f messages/s (rounds: %s)".formatted(
                    inboxRate(on), inbox.stream().filter(r -> r.inbox() == on)
                            .map(r -> "%,.0f".formatted(r.messagesPerSecond())).collect(Collectors.joining(", ")))));
        }
        double cost = (double) ratios.get("inboxCost");
        rows.add(new Row("inbox", "inbox on ÷ off", cost > 0
                ? "%.2f (exactly-once costs %.0f %%)".formatted((double) ratios.get("inboxOnOverOff"), 100 * cost)
                : "%.2f (no cost measurable: on was the faster in this run)".formatted((double) ratios.get("inboxOnOverOff"))));
        for (String service : pipeline.rssIdleMib().keySet()) {
            rows.add(new Row("memory", "RSS " + service, "%.0f MiB idle after start, %.0f MiB peak at saturation, %.0f MiB idle after".formatted(
                    pipeline.rssIdleMib().get(service), pipeline.rssPeakMib().getOrDefault(service, Double.NaN),
                    pipeline.rssAfterMib().get(service))));
        }
        for (String peer : List.of(OUR, PEER)) {
            rows.add(new Row("memory", "RSS " + peer + " draining the backlog", "%.0f MiB peak (median)".formatted(
                    relay(peer, RelayPeers.Turn::peakRssMib))));
        }
        goals().forEach((goal, verdict) -> rows.add(new Row("goal", goal, String.valueOf(verdict))));
        return rows;
    }

    String text() {
        StringBuilder text = new StringBuilder("Side by side, one run\n");
        conditions.forEach((key, value) -> text.append("  %-22s %s%n".formatted(key, value)));
        text.append('\n');
        List<Row> rows = rows();
        int width = rows.stream().mapToInt(r -> r.figure().length()).max().orElse(10);
        String section = "";
        for (Row row : rows) {
            if (!row.section().equals(section)) {
                section = row.section();
                text.append(section).append('\n');
            }
            text.append("  ").append(row.figure()).append(" ".repeat(width - row.figure().length())).append("  ").append(row.value()).append('\n');
        }
        text.append('\n').append(PEER_DIFFERENCES).append('\n');
        return text.toString();
    }

    Map<String, Object> json() {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("conditions", conditions);
        json.put("peerDifferences", PEER_DIFFERENCES);
        json.put("ceiling", ceilings);
        json.put("floor", floors);
        json.put("pipeline", pipeline);
        json.put("relay", turns);
        json.put("inbox", inbox);
        json.put("ratios", ratios());
        json.put("goals", goals());
        return json;
    }

    /** Writes report.txt, report.json and chart.png into {@code directory}; returns the text. */
    String write(Path directory) throws IOException {
        Files.createDirectories(directory);
        String text = text();
        Files.writeString(directory.resolve("report.txt"), text);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(directory.resolve("report.json").toFile(), json());
        Map<String, Double> throughput = new LinkedHashMap<>();
        throughput.put("pgbench ceiling (tps)", ceilingTps());
        throughput.put("database floor (orders/s)", floorOrdersPerSecond());
        throughput.put("pipeline accepted", pipeline.acceptedPerSecond());
        throughput.put("pipeline applied", pipeline.appliedPerSecond());
        throughput.put("outbox-relay cold", relay(OUR, t -> t.cold().eventsPerSecond()));
        throughput.put("Debezium Server cold", relay(PEER, t -> t.cold().eventsPerSecond()));
        throughput.put("outbox-relay warm", relay(OUR, t -> t.warm().eventsPerSecond()));
        throughput.put("Debezium Server warm", relay(PEER, t -> t.warm().eventsPerSecond()));
        throughput.put("inventory, inbox on", inboxRate(true));
        throughput.put("inventory, inbox off", inboxRate(false));
        Map<String, double[]> latency = new LinkedHashMap<>();
        pipeline.commitToApplied().forEach((consumer, p) -> latency.put("commit → applied, " + consumer,
                new double[] {number(p.get("p50Ms")), number(p.get("p95Ms")), number(p.get("p99Ms"))}));
        Percentiles post = pipeline.placedToApplied();
        latency.put("placed → applied, inventory", new double[] {post.p50(), post.p95(), post.p99()});
        Chart.write(directory.resolve("chart.png"), "%s · %s cores · load %s → %s · %s".formatted(conditions.get("date"),
                conditions.get("cores"), conditions.get("loadAverageStart"), conditions.get("loadAverageEnd"),
                conditions.get("mode")), throughput, latency);
        return text;
    }

    private static double number(Object value) {
        return value instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    static double round(double value, int decimals) {
        double scale = Math.pow(10, decimals);
        return Double.isNaN(value) || Double.isInfinite(value) ? value : Math.round(value * scale) / scale;
    }

    /** One percentile of each of a relay's stages, in the stages' order: "2 / 9 / 14". */
    private static String stage(Map<String, Map<String, Object>> stages, String percentile) {
        return String.join(" / ", stages.values().stream().map(p -> String.valueOf(p.get(percentile))).toList());
    }

    /** The {@code n} largest parts, "name 1.23" each, largest first. */
    private static String largest(Map<String, Double> msPerPart, int n) {
        return msPerPart.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(n)
                .map(part -> "%s %.2f".formatted(part.getKey(), part.getValue())).collect(Collectors.joining(", "));
    }
}
