package dev.outboxinbox.system;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Places orders through order-service's HTTP API at a steady rate, as a careful client does: each
 * order has its own {@code Idempotency-Key}, and a request whose fate is unknown (timeout, reset,
 * 5xx, service down) is retried with the same key, so it can never create two orders. What each
 * request finally came to is recorded for the {@link Verifier}:
 * <ul>
 *   <li>{@code OK}: 201 with the order id;</li>
 *   <li>{@code FAILED}: a definite no (4xx), so nothing may have been written;</li>
 *   <li>{@code UNKNOWN}: no answer after every attempt: the order may or may not exist.</li>
 * </ul>
 * The orders are drawn from a seeded generator: the same seed gives the same orders.
 */
public final class OrderLoad {

    public enum Result { OK, FAILED, UNKNOWN }

    public record Line(String sku, int quantity) {
    }

    /** @param sentAt when its first attempt was sent (null where unknown) */
    public record Request(int index, String idempotencyKey, List<Line> lines, Result result, UUID orderId,
                          int attempts, String detail, Instant sentAt) {

        public Request(int index, String idempotencyKey, List<Line> lines, Result result, UUID orderId, int attempts, String detail) {
            this(index, idempotencyKey, lines, result, orderId, attempts, detail, null);
        }

        Request sentAt(Instant first) {
            return new Request(index, idempotencyKey, lines, result, orderId, attempts, detail, first);
        }
    }

    public record Progress(int done, int total, int ok, int failed, int unknown, int retries) {
        @Override
        public String toString() {
            return "%d/%d requests: %d ok, %d failed, %d unknown, %d retries".formatted(done, total, ok, failed, unknown, retries);
        }
    }

    /** The demo catalogue (inventory-service's V2 migration); SKU-FIG runs out, SKU-DURIAN has none. */
    public static final List<String> SKUS = List.of("SKU-APPLE", "SKU-PEAR", "SKU-PLUM", "SKU-FIG", "SKU-DURIAN");

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Requests in flight at most, unless the caller says otherwise. */
    public static final int MAX_IN_FLIGHT = 64;

    private final URI orderService;
    private final String runId;
    private final long seed;
    private final int attempts;
    private final int maxInFlight;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /**
     * @param runId part of every idempotency key and customer id, so runs never collide
     * @param attempts attempts per order before its result stays unknown (or failed)
     */
    public OrderLoad(URI orderService, String runId, long seed, int attempts) {
        this(orderService, runId, seed, attempts, MAX_IN_FLIGHT);
    }

    /**
     * @param maxInFlight requests in flight at most: with a rate the service cannot reach, the load
     *                    is a closed loop of this many clients (deploy/benchmarks' saturation run)
     */
    public OrderLoad(URI orderService, String runId, long seed, int attempts, int maxInFlight) {
        this.orderService = orderService;
        this.runId = runId;
        this.seed = seed;
        this.attempts = attempts;
        this.maxInFlight = maxInFlight;
    }

    /** The lines of order {@code index}: one to three distinct SKUs, 1–5 of each. */
    public List<Line> linesOf(int index) {
        Random random = new Random(seed * 1_000_003L + index);
        List<String> skus = new ArrayList<>(SKUS);
        Collections.shuffle(skus, random);
        int count = 1 + random.nextInt(3);
        List<Line> lines = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            lines.add(new Line(skus.get(i), 1 + random.nextInt(5)));
        }
        return lines;
    }

    /** Sends {@code orders} orders at {@code perSecond}, reporting progress about every second. */
    public List<Request> run(int orders, double perSecond, Consumer<Progress> progress) {
        Map<Integer, Request> results = new ConcurrentHashMap<>();
        AtomicInteger ok = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger unknown = new AtomicInteger();
        AtomicInteger retries = new AtomicInteger();
        Semaphore inFlight = new Semaphore(maxInFlight);
        ScheduledExecutorService retryTimer = Executors.newSingleThreadScheduledExecutor();
        List<CompletableFuture<Request>> all = new ArrayList<>(orders);
        long start = System.nanoTime();
        long lastReport = start;
        try {
            for (int i = 0; i < orders; i++) {
                long due = start + (long) (i * 1e9 / perSecond);
                for (long now = System.nanoTime(); now < due; now = System.nanoTime()) {
                    LockSupport.parkNanos(due - now); // pacing the load, not waiting for a result
                }
                inFlight.acquireUninterruptibly();
                int index = i;
                Instant sentAt = Instant.now();
                CompletableFuture<Request> request = place(index, linesOf(index), 1, false, retryTimer, retries)
                        .thenApply(r -> r.sentAt(sentAt));
                request.whenComplete((r, e) -> {
                    inFlight.release();
                    (r.result() == Result.OK ? ok : r.result() == Result.FAILED ? failed : unknown).incrementAndGet();
                    results.put(index, r);
                });
                all.add(request);
                if (System.nanoTime() - lastReport > 1e9) {
                    lastReport = System.nanoTime();
                    progress.accept(new Progress(results.size(), orders, ok.get(), failed.get(), unknown.get(), retries.get()));
                }
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        } finally {
            retryTimer.shutdownNow();
        }
        progress.accept(new Progress(results.size(), orders, ok.get(), failed.get(), unknown.get(), retries.get()));
        List<Request> ordered = new ArrayList<>(orders);
        for (int i = 0; i < orders; i++) {
            ordered.add(results.get(i));
        }
        return ordered;
    }

    /** @param unknownBefore an earlier attempt may have committed: a later refusal does not make the order fail */
    private CompletableFuture<Request> place(int index, List<Line> lines, int attempt, boolean unknownBefore,
                                             ScheduledExecutorService retryTimer, AtomicInteger retries) {
        String key = runId + "-" + index;
        HttpRequest request = HttpRequest.newBuilder(orderService.resolve("/orders"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(body(index, lines)))
                .build();
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                .handle((response, error) -> outcome(index, key, lines, attempt, response, error))
                .thenCompose(result -> {
                    boolean refused = result.result() == Result.FAILED && result.detail().startsWith("connection refused");
                    boolean retry = result.result() == Result.UNKNOWN || refused;
                    if (!retry || attempt >= attempts) {
                        return CompletableFuture.completedFuture(refused && unknownBefore
                                ? new Request(index, key, lines, Result.UNKNOWN, null, attempt,
                                        "an earlier attempt may have committed; the last one: " + result.detail())
                                : result);
                    }
                    retries.incrementAndGet();
                    long pauseMillis = Math.min(4_000, 250L << Math.min(attempt, 4));
                    boolean unknown = unknownBefore || result.result() == Result.UNKNOWN;
                    CompletableFuture<Request> next = new CompletableFuture<>();
                    retryTimer.schedule(() -> place(index, lines, attempt + 1, unknown, retryTimer, retries)
                            .whenComplete((r, e) -> next.complete(r)), pauseMillis, TimeUnit.MILLISECONDS);
                    return next;
                });
    }

    private Request outcome(int index, String key, List<Line> lines, int attempt, HttpResponse<String> response, Throwable error) {
        if (error != null) {
            Throwable cause = error.getCause() != null ? error.getCause() : error;
            if (cause instanceof ConnectException) {
                // Nothing reached the service: a definite no, but worth another attempt.
                return new Request(index, key, lines, Result.FAILED, null, attempt, "connection refused: " + cause.getMessage());
            }
            return new Request(index, key, lines, Result.UNKNOWN, null, attempt, cause.toString());
        }
        int status = response.statusCode();
        if (status == 201 || status == 200) {
            try {
                JsonNode order = JSON.readTree(response.body());
                return new Request(index, key, lines, Result.OK, UUID.fromString(order.get("id").asText()), attempt, null);
            } catch (IOException | RuntimeException e) {
                return new Request(index, key, lines, Result.UNKNOWN, null, attempt, "unreadable 201: " + response.body());
            }
        }
        if (status >= 400 && status < 500) {
            return new Request(index, key, lines, Result.FAILED, null, attempt, status + " " + response.body());
        }
        return new Request(index, key, lines, Result.UNKNOWN, null, attempt, status + " " + response.body());
    }

    private String body(int index, List<Line> lines) {
        StringBuilder json = new StringBuilder("{\"customerId\":\"").append(runId).append('-').append(index).append("\",\"lines\":[");
        for (int i = 0; i < lines.size(); i++) {
            json.append(i == 0 ? "" : ",").append("{\"sku\":\"").append(lines.get(i).sku())
                    .append("\",\"quantity\":").append(lines.get(i).quantity()).append('}');
        }
        return json.append("]}").toString();
    }
}
