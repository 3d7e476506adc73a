package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;

import io.quarkus.test.common.http.TestHTTPResource;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

@OrderServiceTest
class IdempotencyKeyTest {

    @Inject
    OrderDatabase db;

    @TestHTTPResource("/orders")
    URI ordersUri;

    private static Response post(String key, String body) {
        return given().contentType(ContentType.JSON).header("Idempotency-Key", key).body(body).post("/orders");
    }

    @Test
    void aRetryWithTheSameKeyAndBodyReturnsTheSameOrderAndWritesNothing() {
        String key = UUID.randomUUID().toString();
        String customer = "retrying-" + key;
        Response first = post(key, PlacingAnOrderTest.body(customer));
        first.then().statusCode(201).header("Idempotent-Replayed", "false");

        Response retry = post(key, PlacingAnOrderTest.body(customer));
        retry.then().statusCode(201).header("Idempotent-Replayed", "true")
                .header("Location", first.header("Location"))
                .body("id", equalTo(first.path("id")))
                .body("placedAt", equalTo(first.path("placedAt")));

        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", customer)).isOne();
        assertThat(db.count("SELECT count(*) FROM outbox WHERE aggregateid = ?", (String) first.path("id"))).isOne();
    }

    /**
     * A customerId holding the fingerprint's own separators, spelling a line: without the length
     * prefixes it would encode like the second request. (Control characters, which the first fingerprint
     * used as separators, are now refused at the door: InvalidOrderTest.)
     */
    @Test
    void aCustomerIdThatLooksLikeALineCannotPassForAnotherRequest() {
        String key = UUID.randomUUID().toString();
        post(key, """
                {"customerId": "c2;9:SKU-APPLE1;", "lines": [{"sku": "SKU-PEAR", "quantity": 2}]}""")
                .then().statusCode(201);

        post(key, """
                {"customerId": "c", "lines": [{"sku": "SKU-APPLE", "quantity": 1}, {"sku": "SKU-PEAR", "quantity": 2}]}""")
                .then().statusCode(422).contentType("application/problem+json");
    }

    @Test
    void theSameKeyWithADifferentBodyIsA422AndWritesNothing() {
        String key = UUID.randomUUID().toString();
        post(key, PlacingAnOrderTest.body("first-body")).then().statusCode(201);
        long orders = db.orders();
        long events = db.outboxRows();

        post(key, PlacingAnOrderTest.body("second-body")).then().statusCode(422)
                .contentType("application/problem+json")
                .body("title", equalTo("Idempotency-Key reused"));

        assertThat(db.orders()).isEqualTo(orders);
        assertThat(db.outboxRows()).isEqualTo(events);
    }

    @Test
    void twentyConcurrentRequestsWithOneKeyMakeOneOrderAndOneEvent() throws Exception {
        String key = UUID.randomUUID().toString();
        String customer = "concurrent-" + key;
        int requests = 20;
        CyclicBarrier start = new CyclicBarrier(requests);
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest request = HttpRequest.newBuilder(ordersUri)
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(PlacingAnOrderTest.body(customer))).build();

        List<HttpResponse<String>> responses;
        ExecutorService pool = Executors.newFixedThreadPool(requests);
        try {
            List<CompletableFuture<HttpResponse<String>>> futures = IntStream.range(0, requests)
                    .mapToObj(i -> CompletableFuture.supplyAsync(() -> {
                        try {
                            start.await();
                            return http.send(request, HttpResponse.BodyHandlers.ofString());
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }, pool)).toList();
            responses = futures.stream().map(CompletableFuture::join).toList();
        } finally {
            pool.shutdownNow();
        }

        assertThat(responses).extracting(HttpResponse::statusCode).containsOnly(201);
        Set<String> locations = responses.stream()
                .map(r -> r.headers().firstValue("Location").orElseThrow()).collect(Collectors.toSet());
        assertThat(locations).hasSize(1);
        assertThat(responses.stream().filter(r -> r.headers().firstValue("Idempotent-Replayed").orElseThrow().equals("false")))
                .hasSize(1);
        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", customer)).isOne();
        assertThat(db.count("""
                SELECT count(*) FROM outbox o JOIN orders ord ON o.aggregateid = ord.id::text
                WHERE ord.customer_id = ?""", customer)).isOne();
    }

    @Test
    void requestsWithoutAKeyAreIndependentOrders() {
        String customer = "no-key-" + UUID.randomUUID();
        given().contentType(ContentType.JSON).body(PlacingAnOrderTest.body(customer)).post("/orders").then().statusCode(201);
        given().contentType(ContentType.JSON).body(PlacingAnOrderTest.body(customer)).post("/orders").then().statusCode(201);
        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", customer)).isEqualTo(2);
    }

    @Test
    void aBlankOrOversizedKeyIsA400Problem() {
        for (String key : List.of(" ", "k".repeat(256))) {
            post(key, PlacingAnOrderTest.body("bad-key")).then().statusCode(400)
                    .contentType("application/problem+json")
                    .body("errors[0].field", equalTo("Idempotency-Key"));
        }
        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = 'bad-key'")).isZero();
    }
}
