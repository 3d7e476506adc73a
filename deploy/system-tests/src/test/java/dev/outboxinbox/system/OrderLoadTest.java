package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The load's cancels: the share drawn from the seed holds for small seeds too, and the client
 * retries a cancel whose outcome it does not know, counts a 409 as an answer, and records each.
 * The order-service here is a stub HTTP server: what is tested is the client, not the delivery path.
 */
class OrderLoadTest {

    private HttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    @Test
    void theShareOfCancelsHoldsForEverySmallSeed() {
        for (long seed = 0; seed <= 40; seed++) {
            OrderLoad load = new OrderLoad(URI.create("http://127.0.0.1:1"), "r", seed, 3).cancelling(0.2);
            List<Long> plans = IntStream.range(0, 1_200).mapToObj(load::cancelPlanOf).filter(p -> p != null).toList();
            long atOnce = plans.stream().filter(p -> p == 0).count();
            // 240 expected; binomial standard deviation ~14: 190-290 holds for any sound draw.
            assertThat(plans).as("seed %d", seed).hasSizeBetween(190, 290);
            assertThat(atOnce).as("seed %d: half at once", seed).isBetween(plans.size() / 2L - 45, plans.size() / 2L + 45);
            assertThat(plans).as("seed %d", seed).allMatch(p -> p == 0 || (p >= 200 && p <= 3_000));
            // The first orders are not all alike (java.util.Random's first draw for a small seed would be).
            assertThat(IntStream.range(0, 50).mapToObj(load::cancelPlanOf).filter(p -> p != null).count()).as("seed %d", seed).isPositive();
        }
        OrderLoad load = new OrderLoad(URI.create("http://127.0.0.1:1"), "r", 12, 3);
        assertThat(IntStream.range(0, 1_200).mapToObj(load.cancelling(0.2)::cancelPlanOf).toList())
                .as("the same seed, the same cancels")
                .isEqualTo(IntStream.range(0, 1_200).mapToObj(load.cancelling(0.2)::cancelPlanOf).toList());
        assertThat(IntStream.range(0, 1_200).mapToObj(load::cancelPlanOf)).as("no share, no cancel").allMatch(p -> p == null);
    }

    @Test
    void aCancelIsRetriedUntilAnsweredAndA409IsAnAnswer() throws Exception {
        Map<String, AtomicInteger> cancelAttempts = new ConcurrentHashMap<>();
        Map<Integer, UUID> orderIds = new ConcurrentHashMap<>();
        AtomicInteger placed = new AtomicInteger();
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/orders", exchange -> {
            String path = exchange.getRequestURI().getPath();
            if (path.equals("/orders")) {
                UUID id = UUID.randomUUID();
                orderIds.put(placed.getAndIncrement(), id);
                answer(exchange, 201, "{\"id\":\"" + id + "\"}");
                return;
            }
            String order = path.substring("/orders/".length(), path.length() - "/cancel".length());
            int attempt = cancelAttempts.computeIfAbsent(order, o -> new AtomicInteger()).incrementAndGet();
            // Every third order: rejected by inventory (409); the others: 503 once, then taken.
            int index = orderIds.entrySet().stream().filter(e -> e.getValue().toString().equals(order)).findFirst().orElseThrow().getKey();
            if (index % 3 == 0) {
                answer(exchange, 409, "{\"title\":\"inventory rejected this order\"}");
            } else if (attempt == 1) {
                answer(exchange, 503, "{}");
            } else {
                answer(exchange, 202, "{\"id\":\"" + order + "\",\"status\":\"CANCELLING\"}");
            }
        });
        server.start();
        OrderLoad load = new OrderLoad(URI.create("http://127.0.0.1:" + server.getAddress().getPort()), "r", 5, 4).cancelling(1.0);
        List<OrderLoad.Progress> progress = new ArrayList<>();

        List<OrderLoad.Request> requests = load.run(30, 200, progress::add);

        assertThat(requests).hasSize(30).allSatisfy(r -> {
            assertThat(r.result()).isEqualTo(OrderLoad.Result.OK);
            assertThat(r.cancel()).isNotNull();
        });
        for (OrderLoad.Request r : requests) {
            int index = orderIds.entrySet().stream().filter(e -> e.getValue().equals(r.orderId())).findFirst().orElseThrow().getKey();
            if (index % 3 == 0) {
                assertThat(r.cancel().result()).isEqualTo(OrderLoad.CancelResult.REJECTED);
                assertThat(r.cancel().attempts()).isOne();
            } else {
                assertThat(r.cancel().result()).isEqualTo(OrderLoad.CancelResult.ACKNOWLEDGED);
                assertThat(r.cancel().attempts()).isEqualTo(2);
            }
        }
        assertThat(progress.get(progress.size() - 1).cancels())
                .isEqualTo(Map.of(OrderLoad.CancelResult.REJECTED, 10, OrderLoad.CancelResult.ACKNOWLEDGED, 20));
        assertThat(requests.stream().filter(r -> r.cancel().delayMillis() > 0)).isNotEmpty();
    }

    @Test
    void aCancelNeverAnsweredStaysUnknownAndAnOrderServiceThatSaysNoFails() throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        AtomicInteger placed = new AtomicInteger();
        server.createContext("/orders", exchange -> {
            if (exchange.getRequestURI().getPath().equals("/orders")) {
                answer(exchange, 201, "{\"id\":\"" + UUID.randomUUID() + "\"}");
            } else if (placed.getAndIncrement() % 2 == 0) {
                answer(exchange, 500, "{}");
            } else {
                answer(exchange, 404, "{\"title\":\"no such order\"}");
            }
        });
        server.start();
        OrderLoad load = new OrderLoad(URI.create("http://127.0.0.1:" + server.getAddress().getPort()), "r", 5, 2).cancelling(1.0);

        List<OrderLoad.Request> requests = load.run(6, 200, p -> { });

        assertThat(requests).extracting(r -> r.cancel().result())
                .containsOnly(OrderLoad.CancelResult.UNKNOWN, OrderLoad.CancelResult.FAILED)
                .contains(OrderLoad.CancelResult.FAILED);
        assertThat(requests).filteredOn(r -> r.cancel().result() == OrderLoad.CancelResult.FAILED)
                .allSatisfy(r -> assertThat(r.cancel().detail()).startsWith("404"));
    }

    private static void answer(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", status >= 400 ? "application/problem+json" : "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }
}
