package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /orders/{id}/cancel}: the order CANCELLING and its OrderCancelled in the outbox in one
 * transaction, once however often (and however concurrently) it is asked; a rejected order is a 409
 * and an unknown one a 404, both problem documents.
 */
@OrderServiceTest
class CancellingAnOrderTest {

    @Inject
    OrderDatabase db;

    @Test
    void aCancelMovesAPendingOrderToCancellingWithItsEventInTheOutbox() throws Exception {
        UUID orderId = InventoryRepliesTest.placeOrder();

        cancel(orderId).then().statusCode(202)
                .header("Idempotent-Replayed", "false")
                .body("id", equalTo(orderId.toString()))
                .body("status", equalTo("CANCELLING"))
                .body("cancelRequestedAt", notNullValue());

        assertThat(db.rows("SELECT status, cancel_requested_at IS NOT NULL AS asked FROM orders WHERE id = ?", orderId))
                .singleElement().isEqualTo(Map.of("status", "CANCELLING", "asked", true));
        List<Map<String, Object>> events = db.rows("""
                SELECT id, aggregatetype, aggregateid, type, schema_version, payload::text AS payload
                FROM outbox WHERE aggregateid = ? ORDER BY occurred_at, type DESC""", orderId.toString());
        assertThat(events).extracting(e -> e.get("type")).containsExactly(OrderCreated.TYPE, OrderCancelled.TYPE);
        Map<String, Object> cancelled = events.get(1);
        assertThat(cancelled).as("the same exchange and partition key as the order's creation")
                .containsEntry("aggregatetype", events.get(0).get("aggregatetype"))
                .containsEntry("aggregateid", orderId.toString())
                .containsEntry("schema_version", OrderCancelled.SCHEMA_VERSION);
        OrderEvent event = EventSchema.decode(cancelled.get("id").toString(), OrderCancelled.TYPE, 1,
                cancelled.get("payload").toString().getBytes(StandardCharsets.UTF_8), OrderEvent.class);
        assertThat(event).isInstanceOfSatisfying(OrderCancelled.class, e -> assertThat(e.orderId()).isEqualTo(orderId));
    }

    @Test
    void aConfirmedOrderCanBeCancelledToo() {
        UUID orderId = InventoryRepliesTest.placeOrder();
        db.execute("UPDATE orders SET status = 'CONFIRMED', decided_at = now() WHERE id = '" + orderId + "'");

        cancel(orderId).then().statusCode(202).body("status", equalTo("CANCELLING"));
        assertThat(cancellations(orderId)).isOne();
    }

    @Test
    void aRepeatedCancelAnswersTheSameOrderAndWritesNoSecondEvent() {
        UUID orderId = InventoryRepliesTest.placeOrder();
        String first = cancel(orderId).then().statusCode(202).header("Idempotent-Replayed", "false").extract().path("cancelRequestedAt");

        for (int i = 0; i < 3; i++) {
            cancel(orderId).then().statusCode(202)
                    .header("Idempotent-Replayed", "true")
                    .body("status", equalTo("CANCELLING"))
                    .body("cancelRequestedAt", equalTo(first));
        }
        assertThat(cancellations(orderId)).isOne();

        db.execute("UPDATE orders SET status = 'CANCELLED', cancelled_at = now() WHERE id = '" + orderId + "'");
        cancel(orderId).then().statusCode(200).header("Idempotent-Replayed", "true").body("status", equalTo("CANCELLED"));
        assertThat(cancellations(orderId)).isOne();
    }

    @Test
    void concurrentCancelsOfOneOrderWriteOneEvent() throws Exception {
        int requests = 8;
        for (int round = 0; round < 5; round++) {
            UUID orderId = InventoryRepliesTest.placeOrder();
            CyclicBarrier together = new CyclicBarrier(requests);
            ExecutorService pool = Executors.newFixedThreadPool(requests);
            try {
                List<CompletableFuture<Response>> answers = java.util.stream.IntStream.range(0, requests)
                        .mapToObj(i -> CompletableFuture.supplyAsync(() -> {
                            await(together);
                            return cancel(orderId);
                        }, pool)).toList();
                List<Response> responses = answers.stream().map(CompletableFuture::join).toList();
                assertThat(responses).extracting(Response::statusCode).containsOnly(202);
                assertThat(responses).extracting(r -> r.header("Idempotent-Replayed")).as("one request cancelled it")
                        .containsOnlyOnce("false");
            } finally {
                pool.shutdownNow();
            }
            assertThat(cancellations(orderId)).as("round " + round).isOne();
        }
    }

    @Test
    void aRejectedOrderCannotBeCancelledAndTheAnswerSaysWhy() {
        UUID orderId = InventoryRepliesTest.placeOrder();
        db.execute("UPDATE orders SET status = 'REJECTED', status_reason = 'insufficient stock', decided_at = now() WHERE id = '"
                + orderId + "'");

        cancel(orderId).then().statusCode(409)
                .contentType("application/problem+json")
                .body("status", equalTo(409))
                .body("title", equalTo("Order cannot be cancelled"))
                .body("detail", containsString("inventory rejected this order: nothing was reserved, so there is nothing to cancel"));
        assertThat(cancellations(orderId)).isZero();
        assertThat(db.rows("SELECT status FROM orders WHERE id = ?", orderId)).singleElement().isEqualTo(Map.of("status", "REJECTED"));
    }

    @Test
    void anUnknownOrderIsA404Problem() {
        UUID unknown = UUID.randomUUID();
        cancel(unknown).then().statusCode(404)
                .contentType("application/problem+json")
                .body("detail", containsString(unknown.toString()));
        assertThat(cancellations(unknown)).isZero();
    }

    private long cancellations(UUID orderId) {
        return db.count("SELECT count(*) FROM outbox WHERE aggregateid = ? AND type = ?", orderId.toString(), OrderCancelled.TYPE);
    }

    static Response cancel(UUID orderId) {
        return given().post("/orders/" + orderId + "/cancel");
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
