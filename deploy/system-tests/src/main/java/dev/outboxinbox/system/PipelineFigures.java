package dev.outboxinbox.system;

import dev.outboxinbox.testing.OperationsAuth;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Commit → applied percentiles and the relays' lag through a whole run, as the services' own
 * {@code /q/metrics} show them: the same figures an operator's Prometheus and {@code deploy/local/status}
 * read. The consumers' {@code inbox_commit_to_applied_seconds} histograms are sampled every few seconds
 * and added up across process restarts (a killed consumer starts its counters again at zero: the
 * increments are counted, as Prometheus's {@code increase()} does), so a chaos run's percentiles cover
 * every fault. What a consumer applied after its last sample and before a kill -9 is not counted.
 * The relays' stages of the same hop ({@code outbox_relay_commit_to_read/handed/confirmed_seconds}: from
 * the commit to Debezium reading the event, handing its batch over, and the broker's confirm) are added
 * up the same way, so a hop's latency can be told apart: the relay's part, then the broker's and the consumer's.
 */
public final class PipelineFigures implements AutoCloseable {

    private static final Pattern BUCKET = Pattern.compile(
            "(?m)^inbox_commit_to_applied_seconds_bucket\\{consumer=\"([^\"]+)\",le=\"([^\"]+)\"} (\\S+)$");
    private static final Pattern RELAY_BUCKET = Pattern.compile(
            "(?m)^outbox_relay_commit_to_(read|handed|confirmed)_seconds_bucket\\{le=\"([^\"]+)\"} (\\S+)$");
    /** The relays' stages, in the order an event goes through them. */
    public static final List<String> RELAY_STAGES = List.of("read", "handed", "confirmed");
    private static final Pattern GAUGE = Pattern.compile("(?m)^(outbox_relay_slot_retained_wal_bytes|"
            + "outbox_relay_oldest_unpublished_age_seconds)(?:\\{[^}]*})? (\\S+)$");

    private final Map<String, URI> consumers;
    private final Map<String, URI> relays;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private final ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "pipeline-figures");
        thread.setDaemon(true);
        return thread;
    });
    /** Per endpoint and consumer: the cumulative bucket counts seen last. */
    private final Map<String, TreeMap<Double, Double>> lastSeen = new HashMap<>();
    /** Per consumer: the bucket counts added up over the run (cumulative, as Prometheus buckets are). */
    private final Map<String, TreeMap<Double, Double>> total = new TreeMap<>();
    /** Per relay and stage ("relay|stage"): the same for the relays' commit → read, handed, confirmed. */
    private final Map<String, TreeMap<Double, Double>> relayStages = new TreeMap<>();
    /** Per relay: the largest retained WAL (bytes) and the oldest unpublished event (seconds) seen. */
    private final Map<String, double[]> relayWorst = new TreeMap<>();
    /** The endpoints that refused the monitor's credential, each said once. */
    private final Set<URI> refused = ConcurrentHashMap.newKeySet();

    private PipelineFigures(Map<String, URI> consumers, Map<String, URI> relays) {
        this.consumers = consumers;
        this.relays = relays;
    }

    /** Starts sampling the endpoints (name → base URI) every {@code interval}, until {@link #close()}. */
    public static PipelineFigures sampling(Map<String, URI> consumers, Map<String, URI> relays, Duration interval) {
        PipelineFigures figures = new PipelineFigures(consumers, relays);
        figures.sampler.scheduleWithFixedDelay(figures::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        return figures;
    }

    /**
     * As {@link #sampling}, counting only what happens from now on: what the histograms hold already
     * (an earlier load on the same processes) is the baseline, not part of the figures.
     */
    public static PipelineFigures samplingFromNow(Map<String, URI> consumers, Map<String, URI> relays, Duration interval) {
        PipelineFigures figures = new PipelineFigures(consumers, relays);
        synchronized (figures) {
            figures.sample();
            figures.total.clear();
            figures.relayStages.clear();
            figures.relayWorst.clear();
        }
        figures.sampler.scheduleWithFixedDelay(figures::sample, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
        return figures;
    }

    /** One last sample, then no more. */
    @Override
    public void close() {
        sampler.shutdownNow();
        try {
            sampler.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        sample();
    }

    synchronized void sample() {
        consumers.forEach((endpoint, uri) -> scrape(uri).ifPresent(page -> addBuckets(endpoint, page)));
        relays.forEach((relay, uri) -> scrape(uri).ifPresent(page -> {
            addRelayBuckets(relay, page);
            Matcher gauge = GAUGE.matcher(page);
            double[] worst = relayWorst.computeIfAbsent(relay, r -> new double[] {-1, -1});
            while (gauge.find()) {
                int index = gauge.group(1).endsWith("bytes") ? 0 : 1;
                worst[index] = Math.max(worst[index], Double.parseDouble(gauge.group(2)));
            }
        }));
    }

    /** Adds what a page's histogram gained since the last page from the same endpoint (all of it after a restart). */
    synchronized void addBuckets(String endpoint, String page) {
        accumulate(endpoint, buckets(BUCKET.matcher(page), 1, 2, 3), total);
    }

    /** As {@link #addBuckets}, for a relay's stages: each stage is a histogram of its own ("relay|stage"). */
    synchronized void addRelayBuckets(String relay, String page) {
        Map<String, TreeMap<Double, Double>> stages = buckets(RELAY_BUCKET.matcher(page), 1, 2, 3);
        Map<String, TreeMap<Double, Double>> named = new HashMap<>();
        stages.forEach((stage, counts) -> named.put(relay + "|" + stage, counts));
        accumulate(relay, named, relayStages);
    }

    /** A page's cumulative bucket counts per series (the group {@code name} names it), by upper bound. */
    private static Map<String, TreeMap<Double, Double>> buckets(Matcher bucket, int name, int le, int count) {
        Map<String, TreeMap<Double, Double>> now = new HashMap<>();
        while (bucket.find()) {
            double bound = bucket.group(le).equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(bucket.group(le));
            now.computeIfAbsent(bucket.group(name), c -> new TreeMap<>()).put(bound, Double.parseDouble(bucket.group(count)));
        }
        return now;
    }

    private void accumulate(String endpoint, Map<String, TreeMap<Double, Double>> now, Map<String, TreeMap<Double, Double>> into) {
        now.forEach((series, counts) -> {
            TreeMap<Double, Double> before = lastSeen.getOrDefault(endpoint + "|" + series, new TreeMap<>());
            boolean restarted = counts.getOrDefault(Double.POSITIVE_INFINITY, 0.0) < before.getOrDefault(Double.POSITIVE_INFINITY, 0.0);
            TreeMap<Double, Double> sum = into.computeIfAbsent(series, c -> new TreeMap<>());
            counts.forEach((le, count) -> sum.merge(le, restarted ? count : count - before.getOrDefault(le, 0.0), Double::sum));
            lastSeen.put(endpoint + "|" + series, counts);
        });
    }

    /** The q-quantile of a consumer's commit → applied, in seconds, interpolated within its bucket (histogram_quantile); NaN if none. */
    public synchronized double quantile(String consumer, double q) {
        return quantileOf(total.get(consumer), q);
    }

    /** The same for a relay's stage ({@link #RELAY_STAGES}): from the commit to that stage, in seconds; NaN if none. */
    public synchronized double relayQuantile(String relay, String stage, double q) {
        return quantileOf(relayStages.get(relay + "|" + stage), q);
    }

    private static double quantileOf(TreeMap<Double, Double> buckets, double q) {
        if (buckets == null || buckets.getOrDefault(Double.POSITIVE_INFINITY, 0.0) <= 0) {
            return Double.NaN;
        }
        double rank = q * buckets.get(Double.POSITIVE_INFINITY);
        double lower = 0;
        double below = 0;
        for (Map.Entry<Double, Double> entry : buckets.entrySet()) {
            if (entry.getValue() >= rank) {
                if (entry.getKey().isInfinite()) {
                    return lower;
                }
                double inBucket = entry.getValue() - below;
                return inBucket <= 0 ? entry.getKey() : lower + (entry.getKey() - lower) * (rank - below) / inBucket;
            }
            lower = entry.getKey();
            below = entry.getValue();
        }
        return lower;
    }

    /** Messages timed, per consumer. */
    public synchronized long count(String consumer) {
        TreeMap<Double, Double> buckets = total.get(consumer);
        return buckets == null ? 0 : Math.round(buckets.getOrDefault(Double.POSITIVE_INFINITY, 0.0));
    }

    /** For the JSON report: per consumer n, p50, p95, p99 (ms); per relay its stages the same way, and the worst lag seen. */
    public synchronized Map<String, Object> summary() {
        Map<String, Object> summary = new LinkedHashMap<>();
        Map<String, Object> latency = new LinkedHashMap<>();
        for (String consumer : total.keySet()) {
            latency.put(consumer, Map.of("n", count(consumer), "p50Ms", millis(quantile(consumer, 0.5)),
                    "p95Ms", millis(quantile(consumer, 0.95)), "p99Ms", millis(quantile(consumer, 0.99))));
        }
        summary.put("commitToApplied", latency);
        Map<String, Object> stages = new LinkedHashMap<>();
        for (String relay : relayNames()) {
            Map<String, Object> of = new LinkedHashMap<>();
            for (String stage : RELAY_STAGES) {
                of.put(stage, Map.of("p50Ms", millis(relayQuantile(relay, stage, 0.5)),
                        "p95Ms", millis(relayQuantile(relay, stage, 0.95)), "p99Ms", millis(relayQuantile(relay, stage, 0.99))));
            }
            stages.put(relay, of);
        }
        summary.put("relayCommitTo", stages);
        Map<String, Object> lag = new LinkedHashMap<>();
        relayWorst.forEach((relay, worst) -> lag.put(relay, Map.of("maxRetainedWalBytes", (long) worst[0],
                "maxOldestUnpublishedSeconds", worst[1])));
        summary.put("relayLag", lag);
        return summary;
    }

    public synchronized String toText() {
        StringBuilder text = new StringBuilder();
        for (String consumer : total.keySet()) {
            text.append("commit → applied     %s: p50 %d ms, p95 %d ms, p99 %d ms (n=%d)%n".formatted(consumer,
                    millis(quantile(consumer, 0.5)), millis(quantile(consumer, 0.95)), millis(quantile(consumer, 0.99)), count(consumer)));
        }
        for (String relay : relayNames()) {
            List<String> stages = RELAY_STAGES.stream().map(stage -> "%s p50 %d ms, p99 %d ms".formatted(stage,
                    millis(relayQuantile(relay, stage, 0.5)), millis(relayQuantile(relay, stage, 0.99)))).toList();
            text.append("commit → %s: %s%n".formatted(relay, String.join("; ", stages)));
        }
        relayWorst.forEach((relay, worst) -> text.append("relay lag, worst     %s: %s WAL retained, oldest unpublished %.1f s%n"
                .formatted(relay, worst[0] < 0 ? "?" : "%.1f MB".formatted(worst[0] / 1e6), worst[1])));
        return text.toString();
    }

    /** The relays whose stages were seen, in name order. */
    private Set<String> relayNames() {
        Set<String> names = new TreeSet<>();
        relayStages.keySet().forEach(key -> names.add(key.substring(0, key.lastIndexOf('|'))));
        return names;
    }

    private static long millis(double seconds) {
        return Double.isNaN(seconds) ? -1 : Math.round(seconds * 1000);
    }

    private Optional<String> scrape(URI base) {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(base.resolve("/q/metrics"))
                    .header("Authorization", OperationsAuth.monitor()).timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 401 || response.statusCode() == 403) {
                // Not a service down: the figures would be missing for a reason that looks like a fault.
                if (refused.add(base)) {
                    System.err.printf("[figures] %s/q/metrics refused the monitor's credential (%d): MONITOR_PASSWORD must be"
                            + " the services' (.env)%n", base, response.statusCode());
                }
                return Optional.empty();
            }
            return response.statusCode() == 200 ? Optional.of(response.body()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty(); // down (killed, restarting): the next sample counts what it gained
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}
