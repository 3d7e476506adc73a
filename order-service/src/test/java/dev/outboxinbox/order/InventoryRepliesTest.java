package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Event;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.testing.AsTheRelay;
import dev.outboxinbox.testing.BrokerControl;
import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.Prometheus;
import dev.outboxinbox.testing.RealServices;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Inventory's reply moves the order from PENDING to CONFIRMED or REJECTED, once, through the inbox
 * library, against the real RabbitMQ and PostgreSQL: a reply delivered again, or a second reply for
 * the same order, changes nothing; a reply for an order this service does not have is dead-lettered
 * with the reason; and orders are still taken while the broker is away.
 */
@OrderServiceTest
class InventoryRepliesTest {

    @Inject
    OrderDatabase db;

    @Inject
    InboxMetrics metrics;

    @Test
    void anOrderIsPendingUntilInventoryReservesItThenConfirmed() throws Exception {
        UUID orderId = placeOrder();
        given().get("/orders/" + orderId).then().statusCode(200).body("status", equalTo("PENDING"));

        publish(new InventoryReserved(UUID.randomUUID(), orderId, Instant.now()));

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                given().get("/orders/" + orderId).then().statusCode(200).body("status", equalTo("CONFIRMED")));
    }

    @Test
    void theMetricsCountEachReplyOnceAndTimeItFromInventorysCommit() throws Exception {
        String before = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
        UUID orderId = placeOrder();
        InventoryReserved reply = new InventoryReserved(UUID.randomUUID(), orderId, Instant.now());
        publish(reply);
        publish(reply);

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            String after = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
            assertThat(Prometheus.moved(before, after, "inbox_messages_total", "consumer", "order-service", "outcome", "applied")).isEqualTo(1);
            assertThat(Prometheus.moved(before, after, "inbox_messages_total", "consumer", "order-service", "outcome", "duplicate")).isEqualTo(1);
            assertThat(Prometheus.moved(before, after, "inbox_commit_to_applied_seconds_count", "consumer", "order-service"))
                    .as("timed once: the duplicate is not an application").isEqualTo(1);
            assertThat(Prometheus.value(after, "inbox_commit_to_applied_seconds", "consumer", "order-service", "quantile", "0.99"))
                    .as("p99, seconds").isPositive().isLessThan(30);
            assertThat(Prometheus.find(after, "inbox_commit_to_applied_seconds_bucket", "consumer", "order-service")).isPresent();
        });
    }

    @Test
    void aRejectionRejectsTheOrderWithInventorysReason() throws Exception {
        UUID orderId = placeOrder();
        publish(new InventoryRejected(UUID.randomUUID(), orderId, "insufficient stock for SKU-DURIAN: 1 wanted, 0 available", Instant.now()));

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/orders/" + orderId).then().statusCode(200)
                .body("status", equalTo("REJECTED"))
                .body("statusReason", equalTo("insufficient stock for SKU-DURIAN: 1 wanted, 0 available")));
    }

    @Test
    void aReplyDeliveredElevenTimesDecidesTheOrderOnce() throws Exception {
        UUID orderId = placeOrder();
        InventoryReserved reply = new InventoryReserved(UUID.randomUUID(), orderId, Instant.now());
        long duplicatesBefore = metrics.duplicates();
        for (int i = 0; i < 11; i++) {
            publish(reply);
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.duplicates() - duplicatesBefore >= 10);

        assertThat(db.rows("SELECT status, decided_by FROM orders WHERE id = ?", orderId)).singleElement()
                .isEqualTo(Map.of("status", "CONFIRMED", "decided_by", reply.eventId().toString()));
        assertThat(db.count("SELECT count(*) FROM inbox WHERE consumer = 'order-service' AND message_id = ?",
                reply.eventId().toString())).isOne();
    }

    @Test
    void aSecondReplyForADecidedOrderChangesNothing() throws Exception {
        UUID orderId = placeOrder();
        InventoryReserved first = new InventoryReserved(UUID.randomUUID(), orderId, Instant.now());
        publish(first);
        await().atMost(Duration.ofSeconds(30)).until(() -> "CONFIRMED".equals(status(orderId)));

        long duplicatesBefore = metrics.duplicates();
        long unchangedBefore = metrics.unchanged();
        publish(new InventoryRejected(UUID.randomUUID(), orderId, "a late, contradicting reply", Instant.now()));
        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.unchanged() > unchangedBefore);
        assertThat(metrics.duplicates()).as("another message id: not a duplicate").isEqualTo(duplicatesBefore);

        assertThat(db.rows("SELECT status, decided_by FROM orders WHERE id = ?", orderId)).singleElement()
                .isEqualTo(Map.of("status", "CONFIRMED", "decided_by", first.eventId().toString()));
    }

    @Test
    void aReplyForAnOrderThisServiceDoesNotHaveIsDeadLetteredWithTheReason() throws Exception {
        InventoryReserved stray = new InventoryReserved(UUID.randomUUID(), UUID.randomUUID(), Instant.now());
        publish(stray);
        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            parked.addAll(takeDeadLetters());
            return parked.stream().anyMatch(d -> stray.eventId().toString().equals(d.getProps().getMessageId()));
        });
        assertThat(parked).filteredOn(d -> stray.eventId().toString().equals(d.getProps().getMessageId())).first()
                .satisfies(d -> assertThat(String.valueOf(d.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)))
                        .contains("which order-service does not have"));
    }

    @Test
    void ordersAreTakenWhileTheBrokerIsAwayAndRepliesFlowWhenItIsBack() throws Exception {
        BrokerControl broker = RealServices.rabbitMq().control();
        broker.stopApp();
        UUID orderId;
        try {
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                    .body("checks.find { it.name == 'RabbitMQ consumer' }.data.problem", org.hamcrest.Matchers.not(equalTo("none"))));
            orderId = placeOrder();
        } finally {
            broker.startApp();
        }
        UUID placed = orderId;
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                .body("checks.find { it.name == 'RabbitMQ consumer' }.data.problem", equalTo("none")));
        publish(new InventoryReserved(UUID.randomUUID(), placed, Instant.now()));
        await().atMost(Duration.ofSeconds(30)).until(() -> "CONFIRMED".equals(status(placed)));
    }

    static UUID placeOrder() {
        return UUID.fromString(PlacingAnOrderTest.post(PlacingAnOrderTest.body("reply-" + UUID.randomUUID()))
                .then().statusCode(201).extract().path("id"));
    }

    private String status(UUID orderId) {
        return String.valueOf(db.rows("SELECT status FROM orders WHERE id = ?", orderId).get(0).get("status"));
    }

    /** As outbox-relay publishes an event of inventory's outbox. */
    static void publish(Event event) throws Exception {
        AsTheRelay.publish(RealServices.rabbitMq().connectionFactory(OrderServiceTest.VIRTUAL_HOST), event);
    }

    static List<GetResponse> takeDeadLetters() throws Exception {
        List<GetResponse> taken = new ArrayList<>();
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            for (GetResponse response; (response = channel.basicGet(Topology.ORDER_DEAD_LETTER_QUEUE, true)) != null; ) {
                taken.add(response);
            }
        }
        return taken;
    }

    private static Connection connection() throws Exception {
        return RealServices.rabbitMq().connectionFactory(OrderServiceTest.VIRTUAL_HOST).newConnection();
    }
}
