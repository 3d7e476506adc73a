package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.contains;
import static org.hamcrest.Matchers.hasItem;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.testing.OperationsAuth;
import jakarta.inject.Inject;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A dead letter goes back once its cause is fixed: with its message id, to this service's queue,
 * where it takes effect once; sent back again, the inbox absorbs it.
 */
@InventoryServiceTest
class DeadLetterRedeliveryTest {

    @Inject
    InventoryDatabase db;

    @Inject
    InboxMetrics metrics;

    @Test
    void aDeadLetterSentBackAfterItsCauseIsFixedTakesEffectOnceAndLeavesTheQueue() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 3);
        String id = order.eventId().toString();
        String guard = "refuse_" + sku.replace('-', '_').toLowerCase();
        db.execute("""
                CREATE FUNCTION %1$s() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'injected: a rule this order breaks until it is fixed' USING ERRCODE = '23514'; END $$;
                CREATE TRIGGER %1$s BEFORE INSERT ON reservations FOR EACH ROW
                    WHEN (NEW.sku = '%2$s') EXECUTE FUNCTION %1$s();
                """.formatted(guard, sku));
        try {
            Broker.publish(order);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().header("Authorization", OperationsAuth.operator()).get("/dead-letters").then().statusCode(200)
                    .body("messageId", hasItem(id)));
        } finally {
            db.execute("DROP TRIGGER %1$s ON reservations; DROP FUNCTION %1$s()".formatted(guard));
        }
        assertThat(db.status(order.orderId())).isNull();

        given().header("Authorization", OperationsAuth.operator()).post("/dead-letters/redeliver?messageId=" + id).then().statusCode(200).body("redelivered", contains(id));

        await().atMost(Duration.ofSeconds(30)).until(() -> "RESERVED".equals(db.status(order.orderId())));
        given().header("Authorization", OperationsAuth.operator()).get("/dead-letters").then().statusCode(200).body("messageId", org.hamcrest.Matchers.not(hasItem(id)));

        // The same message once more, as a second redelivery or a replay would bring it: no second effect.
        long duplicatesBefore = metrics.duplicates();
        Broker.publish(Topology.INVENTORY_RETRY_EXCHANGE, "", Broker.propertiesOf(order).build(),
                dev.outboxinbox.events.EventJson.write(order).getBytes());
        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.duplicates() > duplicatesBefore);
        assertThat(db.reserved(sku)).isEqualTo(3);
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = ?", id)).isOne();
    }

    @Test
    void onlyTheDeadLettersWhoseReasonContainsTheTextAreSentBack() {
        OrderCreated unreadable = Broker.order(db.newProduct(10), 1);
        OrderCreated empty = Broker.order(db.newProduct(10), 1);
        String unreadableId = unreadable.eventId().toString();
        String emptyId = empty.eventId().toString();
        Broker.publish(Broker.propertiesOf(unreadable).build(), "{\"eventId\": ".getBytes());
        Broker.publish(Broker.propertiesOf(empty).build(), new byte[0]);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().header("Authorization", OperationsAuth.operator())
                .get("/dead-letters").then().statusCode(200).body("messageId", hasItem(unreadableId)).body("messageId", hasItem(emptyId)));

        given().header("Authorization", OperationsAuth.operator()).queryParam("reason", "malformed JSON")
                .post("/dead-letters/redeliver").then().statusCode(200)
                .body("redelivered", hasItem(unreadableId)).body("redelivered", org.hamcrest.Matchers.not(hasItem(emptyId)));
    }
}
