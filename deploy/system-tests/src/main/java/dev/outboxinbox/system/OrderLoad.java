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
import java.util.SplittableRandom;
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
 * With {@link #cancelling(double)}, a seeded share of the acknowledged orders is cancelled
 * ({@code POST /orders/{id}/cancel}), half of them at once after the 201, the rest after a seeded
 * delay of 0.2–3 s; cancelling is idempotent, so an unknown answer is retried like a placement. What
 * each cancel came to is recorded on its request ({@link Cancel}): acknowledged (200/202), rejected
 * (409: inventory had rejected the order, nothing to cancel, an expected answer), failed (any other
 * definite no) or unknown.
 * The orders are drawn from a seeded generator: the same seed gives the same orders and the same cancels.
 */
public final class OrderLoad {

    public enum Result { OK, FAILED, UNKNOWN }

    /**
     * What a cancel came to: ACKNOWLEDGED (200/202: order-service took it), REJECTED (409: the order
     * was rejected by inventory, there is nothing to cancel), FAILED (a definite no that is not 409:
     * a 404 or 400, or the service never reachable), UNKNOWN (no answer after every attempt).
     */
    public enum CancelResult { ACKNOWLEDGED, REJECTED, FAILED, UNKNOWN }

    /**
     * A cancel sent for an acknowledged order.
     * @param delayMillis how long after the 201 it was sent (0: at once)
     */
    public record Cancel(CancelResult result, int attempts, String detail, long delayMillis) {
    }

    public record Line(String sku, int quantity) {
    }

    /**
     * @param sentAt when its first attempt was sent (null where unknown)
     * @param cancel the cancel sent for it, or null if none was
     */
    public record Request(int index, String idempotencyKey, List<Line> lines, Result result, UUID orderId,
                          int attempts, String detail, Instant sentAt, Cancel cancel) {

        public Request(int index, String idempotencyKey, List<Line> lines, Result result, UUID orderId, int attempts, String detail) {
            this(index, idempotencyKey, lines, result, orderId, attempts, detail, null, null);
        }

        public Request(int index, String idempotencyKey, List<Line> lines, Result result, UUID orderId, int attempts, String detail,
                       Instant sentAt) {
            this(index, idempotencyKey, lines, result, orderId, attempts, detail, sentAt, null);
        }

        Request sentAt(Instant first) {
            return new Request(index, idempotencyKey, lines, result, orderId, attempts, detail, first, cancel);
        }

        public Request withCancel(Cancel sent) {
            return new Request(index, idempotencyKey, lines, result, orderId, attempts, detail, sentAt, sent);
        }
    }

    /** @param cancels cancels sent so far, by result (what is still being retried or waits for its delay is not counted) */
    public record Progress(int done, int total, int ok, int failed, int unknown, int retries, Map<CancelResult, Integer> cancels) {

        public Progress(int done, int total, int ok, int failed, int unknown, int retries) {
            this(done, total, ok, failed, unknown, retries, Map.of());
        }

        @Override
        public String toString() {
            return "%d/%d requests: %d ok, %d failed, %d unknown, %d retries".formatted(done, total, ok, failed, unknown, retries)
                    + (cancels.isEmpty() ? "" : "; cancels " + cancels);
        }
    }

    /** Share of the orders the chaos run cancels unless told otherwise. */
    public static final double DEFAULT_CANCEL_SHARE = 0.2;

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
    private final double cancelShare;
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
     *                    is a closed loop of this many clients (deploy/benchmarks' saturation runs use wrk
     *                    now; its latency run caps its open loop with this)
     */
    public OrderLoad(URI orderService, String runId, long seed, int attempts, int maxInFlight) {
        this(orderService, runId, seed, attempts, maxInFlight, 0);
    }

    private OrderLoad(URI orderService, String runId, long seed, int attempts, int maxInFlight, double cancelShare) {
        if (cancelShare < 0 || cancelShare > 1) {
            throw new IllegalArgumentException("the share of orders to cancel is between 0 and 1, not " + cancelShare);
        }
        this.orderService = orderService;
        this.runId = runId;
        this.seed = seed;
        this.attempts = attempts;
        this.maxInFlight = maxInFlight;
        this.cancelShare = cancelShare;
    }

    /**
     * The same load that also cancels {@code share} (0–1) of its acknowledged orders, drawn from the
     * seed ({@link #cancelPlanOf}); 0, the default, cancels nothing.
     */
    public OrderLoad cancelling(double share) {
        return new OrderLoad(orderService, runId, seed, attempts, maxInFlight, share);
    }

    /**
     * Whether order {@code index} is cancelled once acknowledged, and after how long: null for no
     * cancel, else the delay in ms (0 at once, half of the cancels; else 200–3,000). A SplittableRandom
     * per order from the seed: its first draw is well mixed for small seeds too. java.util.Random's is
     * not: {@code new Random(seed).nextDouble()} is 0.730–0.733 for every seed from 0 to 20 (no cancel
     * at all with a share of 0.2), and seeded with {@code seed * 1_000_003 + index} it cancels 58 of
     * 1,200 orders for seed 12 instead of about 240.
     */
    public Long cancelPlanOf(int index) {
        if (cancelShare == 0) {
            return null;
        }
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L ^ (index + 0x632BE59BD9B4E019L * (index + 1)));
        if (random.nextDouble() >= cancelShare) {
            return null;
        }
        return random.nextBoolean() ? 0L : 200L + random.nextLong(2_801);
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
        Map<CancelResult, Integer> cancels = new ConcurrentHashMap<>();
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
                    inFlight.release(); // a cancel to come does not hold a placement's place
                    (r.result() == Result.OK ? ok : r.result() == Result.FAILED ? failed : unknown).incrementAndGet();
                    results.put(index, r);
                });
                Long cancelAfter = cancelPlanOf(index);
                all.add(cancelAfter == null ? request : request.thenCompose(r -> r.result() != Result.OK ? CompletableFuture.completedFuture(r)
                        : cancelLater(r, cancelAfter, retryTimer, retries).thenApply(cancel -> {
                            cancels.merge(cancel.result(), 1, Integer::sum);
                            Request cancelled = r.withCancel(cancel);
                            results.put(index, cancelled);
                            return cancelled;
                        })));
                if (System.nanoTime() - lastReport > 1e9) {
                    lastReport = System.nanoTime();
                    progress.accept(new Progress(results.size(), orders, ok.get(), failed.get(), unknown.get(), retries.get(), Map.copyOf(cancels)));
                }
            }
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        } finally {
            retryTimer.shutdownNow();
        }
        progress.accept(new Progress(results.size(), orders, ok.get(), failed.get(), unknown.get(), retries.get(), Map.copyOf(cancels)));
        List<Request> ordered = new ArrayList<>(orders);
        for (int i = 0; i < orders; i++) {
            ordered.add(all.get(i).join()); // with its cancel, if it had one
        }
        return ordered;
    }

    /** The cancel of an acknowledged order, after {@code delayMillis} (at once if 0). */
    private CompletableFuture<Cancel> cancelLater(Request placed, long delayMillis, ScheduledExecutorService timer, AtomicInteger retries) {
        if (delayMillis == 0) {
            return cancel(placed.orderId(), delayMillis, 1, false, timer, retries);
        }
        CompletableFuture<Cancel> later = new CompletableFuture<>();
        timer.schedule(() -> cancel(placed.orderId(), delayMillis, 1, false, timer, retries)
                .whenComplete((c, e) -> later.complete(c)), delayMillis, TimeUnit.MILLISECONDS);
        return later;
    }

    /**
     * One attempt at a cancel, retried as a placement is (the same pauses, the same number of
     * attempts): an unknown answer or a refused connection is sent again, which is safe because a
     * cancel is idempotent.
     */
    private CompletableFuture<Cancel> cancel(UUID order, long delayMillis, int attempt, boolean unknownBefore,
                                             ScheduledExecutorService timer, AtomicInteger retries) {
        HttpRequest request = HttpRequest.newBuilder(orderService.resolve("/orders/" + order + "/cancel"))
                .timeout(Duration.ofSeconds(10))
                .POST(HttpRequest.BodyPublishers.noBody())
                .build();
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                .handle((response, error) -> cancelOutcome(delayMillis, attempt, response, error))
                .thenCompose(result -> {
                    boolean refused = result.result() == CancelResult.FAILED && result.detail().startsWith("connection refused");
                    boolean retry = result.result() == CancelResult.UNKNOWN || refused;
                    if (!retry || attempt >= attempts) {
                        return CompletableFuture.completedFuture(refused && unknownBefore
                                ? new Cancel(CancelResult.UNKNOWN, attempt, "an earlier attempt may have been taken; the last one: "
                                        + result.detail(), delayMillis)
                                : result);
                    }
                    retries.incrementAndGet();
                    long pauseMillis = Math.min(4_000, 250L << Math.min(attempt, 4));
                    boolean unknown = unknownBefore || result.result() == CancelResult.UNKNOWN;
                    CompletableFuture<Cancel> next = new CompletableFuture<>();
                    timer.schedule(() -> cancel(order, delayMillis, attempt + 1, unknown, timer, retries)
                            .whenComplete((c, e) -> next.complete(c)), pauseMillis, TimeUnit.MILLISECONDS);
                    return next;
                });
    }

    private static Cancel cancelOutcome(long delayMillis, int attempt, HttpResponse<String> response, Throwable error) {
        if (error != null) {
            Throwable cause = error.getCause() != null ? error.getCause() : error;
            if (cause instanceof ConnectException) {
                return new Cancel(CancelResult.FAILED, attempt, "connection refused: " + cause.getMessage(), delayMillis);
            }
            return new Cancel(CancelResult.UNKNOWN, attempt, cause.toString(), delayMillis);
        }
        int status = response.statusCode();
        if (status == 200 || status == 202) {
            return new Cancel(CancelResult.ACKNOWLEDGED, attempt, null, delayMillis);
        }
        if (status == 409) {
            return new Cancel(CancelResult.REJECTED, attempt, "409 " + response.body(), delayMillis);
        }
        if (status >= 400 && status < 500) {
            return new Cancel(CancelResult.FAILED, attempt, status + " " + response.body(), delayMillis);
        }
        return new Cancel(CancelResult.UNKNOWN, attempt, status + " " + response.body(), delayMillis);
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
