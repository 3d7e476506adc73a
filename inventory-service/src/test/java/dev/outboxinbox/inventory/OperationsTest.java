package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThanOrEqualTo;
import static org.hamcrest.Matchers.hasItems;

import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inbox.InboxPurge;
import dev.outboxinbox.testing.BrokerControl;
import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.Prometheus;
import dev.outboxinbox.testing.RealServices;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@InventoryServiceTest
class OperationsTest {

    @Inject
    InventoryDatabase db;

    @Inject
    InboxPurge purge;

    @Test
    void aProductShowsItsStockAndAnOrderItsReservation() {
        String sku = db.newProduct(10);
        OrderCreated order = Broker.order(sku, 4);
        Broker.publish(order);
        await().atMost(Duration.ofSeconds(30)).until(() -> db.status(order.orderId()) != null);

        given().get("/products/" + sku).then().statusCode(200)
                .body("onHand", equalTo(10)).body("reserved", equalTo(4)).body("available", equalTo(6));
        given().get("/orders/" + order.orderId() + "/reservation").then().statusCode(200)
                .body("status", equalTo("RESERVED"))
                .body("lines[0].sku", equalTo(sku)).body("lines[0].quantity", equalTo(4));
    }

    @Test
    void theMetricsCountWhatTheInboxDidAndTimeEachEffectFromTheOrdersCommit() {
        String before = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
        String sku = db.newProduct(10);
        OrderCreated order = Broker.order(sku, 2);
        Broker.publish(order);
        Broker.publish(order);
        String poisonId = UUID.randomUUID().toString();
        Broker.publish(Broker.propertiesOf(order).messageId(poisonId).build(), "{not json".getBytes(StandardCharsets.UTF_8));

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            String after = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
            assertThat(Prometheus.moved(before, after, "inbox_messages_total", "consumer", "inventory-service", "outcome", "applied")).isEqualTo(1);
            assertThat(Prometheus.moved(before, after, "inbox_messages_total", "consumer", "inventory-service", "outcome", "duplicate")).isEqualTo(1);
            assertThat(Prometheus.moved(before, after, "inbox_messages_total", "consumer", "inventory-service", "outcome", "poison")).isEqualTo(1);
            assertThat(Prometheus.moved(before, after, "inbox_commit_to_applied_seconds_count", "consumer", "inventory-service")).isEqualTo(1);
            assertThat(Prometheus.value(after, "inbox_commit_to_applied_seconds", "consumer", "inventory-service", "quantile", "0.5"))
                    .as("p50, seconds").isPositive().isLessThan(30);
            assertThat(Prometheus.moved(before, after, "outbox_rows_written_total", "aggregate_type", "inventory"))
                    .as("the reply, in the same transaction").isEqualTo(1);
            assertThat(Prometheus.find(after, "inbox_transient_failures_total", "consumer", "inventory-service")).isPresent();
        });
        // The summary a page may poll: the queue's depth and the reason, without taking the message.
        given().header("Authorization", OperationsAuth.monitor()).get("/dead-letters/summary").then().statusCode(200)
                .body("queue", equalTo("inventory.orders.dead-letter"))
                .body("depth", greaterThanOrEqualTo(1))
                .body("recent[0].messageId", equalTo(poisonId))
                .body("recent[0].reason", containsString("malformed JSON"));
        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            parked.addAll(Broker.takeDeadLetters());
            return parked.stream().anyMatch(m -> poisonId.equals(m.getProps().getMessageId()));
        });
    }

    @Test
    void theDemoCatalogueIsSeeded() {
        given().get("/products/SKU-APPLE").then().statusCode(200).body("onHand", equalTo(1000));
    }

    @Test
    void unknownThingsAre404Problems() {
        given().get("/products/NOPE").then().statusCode(404).contentType("application/problem+json");
        given().get("/orders/" + UUID.randomUUID() + "/reservation").then().statusCode(404)
                .contentType("application/problem+json");
    }

    @Test
    void readinessReportsTheDatabaseAndTheBroker() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                .body("checks.name", hasItems("Database connections health check", "RabbitMQ consumer"))
                .body("checks.find { it.name == 'RabbitMQ consumer' }.data.deduplication", equalTo("on")));
    }

    /**
     * The broker restarts under the consumer: it is not ready while the broker is away, reconnects
     * by itself, and events published afterwards take effect. (deploy/chaos found SmallRye's connector
     * failing for good after a restart under load; this is the quiet case of the same path.)
     */
    @Test
    void theConsumerComesBackAfterABrokerRestart() {
        BrokerControl broker = RealServices.rabbitMq().control();
        String sku = db.newProduct(10);
        broker.stopApp();
        try {
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(503)
                    .body("checks.find { it.name == 'RabbitMQ consumer' }.status", equalTo("DOWN")));
        } finally {
            broker.startApp();
        }
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200));

        OrderCreated order = Broker.order(sku, 3);
        Broker.publish(order);
        await().atMost(Duration.ofSeconds(30)).until(() -> db.status(order.orderId()) != null);
        given().get("/products/" + sku).then().statusCode(200).body("reserved", equalTo(3));
    }

    @Test
    void thePurgeForgetsMessageIdsOlderThanTheRetention() {
        db.execute("INSERT INTO inbox (consumer, message_id, message_type, received_at) VALUES ('inventory-service', 'old-one', 'OrderCreated', now() - interval '8 days'), ('inventory-service', 'new-one', 'OrderCreated', now())");
        assertThat(purge.purge()).isPositive();
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = 'old-one'")).isZero();
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = 'new-one'")).isOne();
    }

    @Test
    void thePurgeLeavesAnotherConsumersRowsToThatConsumer() {
        // The other consumer keeps a longer horizon, or just has not purged yet: its rows are not ours.
        String other = "purge-test-" + UUID.randomUUID().toString().substring(0, 8);
        db.execute("INSERT INTO inbox (consumer, message_id, message_type, received_at) VALUES"
                + " ('inventory-service', 'shared-old', 'OrderCreated', now() - interval '8 days'),"
                + " ('" + other + "', 'shared-old', 'OrderCreated', now() - interval '8 days'),"
                + " ('" + other + "', 'theirs-old', 'OrderCreated', now() - interval '8 days')");
        purge.purge();
        assertThat(db.count("SELECT count(*) FROM inbox WHERE consumer = 'inventory-service' AND message_id = 'shared-old'")).isZero();
        assertThat(db.count("SELECT count(*) FROM inbox WHERE consumer = '" + other + "'")).isEqualTo(2);
    }
}
