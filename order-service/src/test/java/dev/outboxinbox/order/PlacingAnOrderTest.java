package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.order.domain.OrderService;
import dev.outboxinbox.order.domain.OrderStatus;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@OrderServiceTest
class PlacingAnOrderTest {

    @Inject
    OrderDatabase db;

    @Inject
    OrderService orders;

    static String body(String customerId) {
        return """
                {"customerId": "%s", "lines": [{"sku": "SKU-APPLE", "quantity": 2}, {"sku": "SKU-PEAR", "quantity": 1}]}"""
                .formatted(customerId);
    }

    static Response post(String body) {
        return given().contentType(ContentType.JSON).body(body).post("/orders");
    }

    @Test
    void theOrderAndItsOutboxEventAreCommittedTogether() throws Exception {
        String customer = "customer-" + UUID.randomUUID();
        Response response = post(body(customer));
        response.then().statusCode(201)
                .header("Location", startsWith("http"))
                .body("customerId", equalTo(customer))
                .body("lines.sku", equalTo(List.of("SKU-APPLE", "SKU-PEAR")));
        UUID orderId = UUID.fromString(response.path("id"));
        assertThat(response.header("Location")).endsWith("/orders/" + orderId);

        assertThat(db.count("SELECT count(*) FROM orders WHERE id = ?", orderId)).isOne();
        assertThat(db.count("SELECT count(*) FROM order_lines WHERE order_id = ?", orderId)).isEqualTo(2);
        List<Map<String, Object>> events = db.rows("""
                SELECT id, aggregatetype, type, schema_version, payload::text AS payload, payload->>'eventId' AS event_id
                FROM outbox WHERE aggregateid = ?""", orderId.toString());
        assertThat(events).singleElement().satisfies(event -> {
            assertThat(event).containsEntry("aggregatetype", "orders")
                    .containsEntry("type", OrderCreated.TYPE)
                    .containsEntry("schema_version", OrderCreated.SCHEMA_VERSION)
                    .containsEntry("event_id", event.get("id").toString());
        });
        byte[] payload = events.get(0).get("payload").toString().getBytes(StandardCharsets.UTF_8);
        assertThat(EventSchema.of(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION).orElseThrow().violations(payload))
                .as("the outbox payload must satisfy the published contract").isEmpty();
    }

    @Test
    void aCurrencyAndUnitPricesTravelInOrderCreatedVersion2() throws Exception {
        Response response = post("""
                {"customerId": "priced", "currency": "USD",
                 "lines": [{"sku": "SKU-APPLE", "quantity": 2, "unitPrice": 12.5}, {"sku": "SKU-PEAR", "quantity": 1}]}""");
        response.then().statusCode(201)
                .body("currency", equalTo("USD"))
                .body("lines[0].unitPrice", equalTo(12.5f))
                .body("lines[1]", not(org.hamcrest.Matchers.hasKey("unitPrice")));
        String orderId = response.path("id");
        Map<String, Object> event = db.rows("SELECT schema_version, payload::text AS payload FROM outbox WHERE aggregateid = ?", orderId)
                .get(0);
        assertThat(event).containsEntry("schema_version", 2);
        byte[] payload = event.get("payload").toString().getBytes(StandardCharsets.UTF_8);
        OrderCreated read = EventSchema.decode(new com.fasterxml.jackson.databind.ObjectMapper().readTree(payload).get("eventId").asText(),
                OrderCreated.TYPE, 2, payload, OrderCreated.class);
        assertThat(read.currency()).isEqualTo("USD");
        assertThat(read.lines()).extracting(OrderCreated.Line::unitPrice).containsExactly(new java.math.BigDecimal("12.5"), null);
        given().get("/orders/" + orderId).then().statusCode(200)
                .body("lines[0].unitPrice", equalTo(12.5f));
    }

    @Test
    void anOrderThatNamesNoCurrencyIsInTheDefaultOne() {
        post(body("no-currency")).then().statusCode(201).body("currency", equalTo(OrderCreated.DEFAULT_CURRENCY));
    }

    @Test
    void aPlacedOrderCanBeReadBack() {
        String location = post(body("reader")).then().statusCode(201).extract().header("Location");
        given().get(location).then().statusCode(200)
                .body("customerId", equalTo("reader"))
                .body("lines.quantity", equalTo(List.of(2, 1)));
    }

    @Test
    void anUnknownOrderIsA404Problem() {
        given().get("/orders/" + UUID.randomUUID()).then().statusCode(404)
                .contentType("application/problem+json")
                .body("status", equalTo(404))
                .body("title", equalTo("Order not found"));
    }

    /**
     * With span export off (these tests), order-service makes no span of its own: the client's trace
     * context goes into the outbox row as it came. With export on, the row carries the request's span,
     * a child of the client's (WholeFlowIT follows one order's trace through every service).
     */
    @Test
    void aValidTraceparentIsCarriedIntoTheOutbox() {
        String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        String id = given().contentType(ContentType.JSON).header("traceparent", traceparent).body(body("traced"))
                .post("/orders").then().statusCode(201).extract().path("id");
        assertThat(db.rows("SELECT traceparent FROM outbox WHERE aggregateid = ?", id))
                .singleElement().satisfies(row -> assertThat(row).containsEntry("traceparent", traceparent));
    }

    @Test
    void aMalformedTraceparentIsDroppedNotRejected() {
        String id = given().contentType(ContentType.JSON).header("traceparent", "not-a-trace").body(body("badly-traced"))
                .post("/orders").then().statusCode(201).extract().path("id");
        assertThat(db.rows("SELECT traceparent FROM outbox WHERE aggregateid = ?", id))
                .singleElement().satisfies(row -> assertThat(row.get("traceparent")).isNull());
    }

    @Test
    void aFailureAfterTheOrderInsertLeavesNeitherTheOrderNorTheEvent() {
        String customer = "fails-after-order-insert";
        // A sequence is not transactional: it proves the order INSERT ran before the failure.
        db.execute("""
                CREATE SEQUENCE IF NOT EXISTS order_insert_probe;
                CREATE OR REPLACE FUNCTION probe_order_insert() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM nextval('order_insert_probe'); RETURN NEW; END $$;
                CREATE OR REPLACE FUNCTION fail_outbox_insert() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'injected failure: outbox insert for order %%', NEW.aggregateid; END $$;
                CREATE TRIGGER probe_order_insert AFTER INSERT ON orders FOR EACH ROW
                    WHEN (NEW.customer_id = '%1$s') EXECUTE FUNCTION probe_order_insert();
                CREATE TRIGGER fail_outbox_insert BEFORE INSERT ON outbox FOR EACH ROW
                    WHEN (NEW.payload->>'customerId' = '%1$s') EXECUTE FUNCTION fail_outbox_insert();
                """.formatted(customer));
        try {
            post(body(customer)).then().statusCode(500).contentType("application/problem+json")
                    .body("detail", containsString("whether the order was placed is unknown"))
                    .body("detail", containsString("Retry with the same Idempotency-Key"))
                    .body("detail", not(containsString("nothing was written")));

            assertThat(db.count("SELECT last_value FROM order_insert_probe WHERE is_called"))
                    .as("the order row was inserted before the outbox insert failed").isOne();
            assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", customer)).isZero();
            assertThat(db.count("SELECT count(*) FROM outbox WHERE payload->>'customerId' = ?", customer)).isZero();
        } finally {
            db.execute("""
                    DROP TRIGGER fail_outbox_insert ON outbox;
                    DROP TRIGGER probe_order_insert ON orders;
                    DROP SEQUENCE order_insert_probe;""");
        }
    }

    /** The demo page's counts: every status, each as the database counts it (one GROUP BY, one snapshot). */
    @Test
    void theCountsByStatusAreTheDatabasesOwn() {
        UUID confirmed = UUID.fromString(post(body("counted")).then().statusCode(201).extract().path("id"));
        post(body("counted")).then().statusCode(201);
        db.execute("UPDATE orders SET status = 'CONFIRMED', decided_at = now() WHERE id = '" + confirmed + "'");
        Map<OrderStatus, Long> expected = new EnumMap<>(OrderStatus.class);
        for (OrderStatus status : OrderStatus.values()) {
            expected.put(status, db.count("SELECT count(*) FROM orders WHERE status = ?", status.name()));
        }
        assertThat(expected.get(OrderStatus.CONFIRMED)).isPositive();
        assertThat(expected.get(OrderStatus.PENDING)).isPositive();
        assertThat(orders.countsByStatus()).isEqualTo(expected);
    }
}
