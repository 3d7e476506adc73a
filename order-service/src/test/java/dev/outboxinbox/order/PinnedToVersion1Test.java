package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderCreated;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * order-service pinned to OrderCreated v1 (ORDERS_ORDER_CREATED_VERSION=1), as in the first step of a rolling
 * deploy where the producer goes first: what it writes is v1, which a consumer before its upgrade reads; what
 * v1 cannot carry is refused, not dropped.
 */
@OrderServiceTest
@TestProfile(PinnedToVersion1Test.PinnedToVersion1.class)
class PinnedToVersion1Test {

    public static final class PinnedToVersion1 implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("orders.order-created-version", "1");
        }
    }

    @Inject
    OrderDatabase db;

    @Test
    void anOrderIsAnnouncedInVersion1() throws Exception {
        String orderId = given().contentType(ContentType.JSON).body(PlacingAnOrderTest.body("pinned")).post("/orders")
                .then().statusCode(201).extract().path("id");

        Map<String, Object> event = db.rows("SELECT schema_version, payload::text AS payload FROM outbox WHERE aggregateid = ?", orderId)
                .get(0);
        assertThat(event).containsEntry("schema_version", 1);
        byte[] payload = event.get("payload").toString().getBytes(StandardCharsets.UTF_8);
        assertThat(EventSchema.of(OrderCreated.TYPE, 1).orElseThrow().violations(payload)).isEmpty();
        assertThat(event.get("payload").toString()).doesNotContain("currency");
    }

    @Test
    void anOrderWithAPriceIsRefusedAndNothingIsWritten() {
        long orders = db.orders();
        long events = db.outboxRows();

        given().contentType(ContentType.JSON)
                .body("{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1, \"unitPrice\": 2.5}]}")
                .post("/orders")
                .then().statusCode(400)
                .contentType("application/problem+json")
                .body("title", equalTo("Not accepted yet"))
                .body("detail", containsString("OrderCreated v1"));

        assertThat(db.orders()).isEqualTo(orders);
        assertThat(db.outboxRows()).isEqualTo(events);
    }

    /**
     * The claim, the order and its lines are inserted before the event is found not to fit v1: the refusal
     * rolls them back, the key's claim with them, so the key stays free for the retry after the switch to v2.
     */
    @Test
    void aRefusedOrderLeavesItsIdempotencyKeyUnclaimed() {
        String key = "pinned-refused-" + System.nanoTime();
        long orders = db.orders();
        for (int attempt = 1; attempt <= 2; attempt++) {
            given().contentType(ContentType.JSON).header("Idempotency-Key", key)
                    .body("{\"customerId\": \"c\", \"currency\": \"USD\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1}]}")
                    .post("/orders")
                    .then().statusCode(400)
                    .body("detail", containsString("OrderCreated v1"));
        }

        assertThat(db.rows("SELECT 1 FROM idempotency_keys WHERE idempotency_key = ?", key)).isEmpty();
        assertThat(db.orders()).isEqualTo(orders);
    }
}
