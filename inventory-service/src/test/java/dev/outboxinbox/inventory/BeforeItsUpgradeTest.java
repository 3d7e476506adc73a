package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.not;

import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.testing.OperationsAuth;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * inventory-service before its upgrade, in a rolling deploy where the producer went first: it reads OrderCreated
 * v1 only (INVENTORY_ORDER_CREATED_VERSIONS=1). A v2 event is newer, not broken: it is held, unacked, with its
 * partition paused behind it so that nothing of its order overtakes it, until an upgraded instance takes the
 * partition; held past inbox.hold-unreadable-for (10 s here), it is dead-lettered with a reason that says to upgrade
 * the consumer, and the partition is read on. v1 events are read as ever.
 */
@InventoryServiceTest
@TestProfile(BeforeItsUpgradeTest.ReadsOnlyVersion1.class)
class BeforeItsUpgradeTest {

    public static final class ReadsOnlyVersion1 implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("inventory.order-created-versions", "1", "inbox.hold-unreadable-for", "PT10S");
        }
    }

    @Inject
    InventoryDatabase db;

    @Inject
    InboxMetrics metrics;

    @Test
    void aVersion2EventIsHeldWithNothingOfItsOrderOvertakingItThenDeadLetteredPastTheBound() {
        long heldBefore = metrics.heldCount();
        OrderCreated newer = Broker.order(db.newProduct(100), 2);
        OrderCancelled cancellation = Broker.cancellation(newer);
        String newerId = newer.eventId().toString();

        Broker.publish(newer);
        Broker.publish(cancellation);

        await().atMost(Duration.ofSeconds(8)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                .body(containsString(newerId)).body(containsString("newer than this consumer reads (v1)")));
        assertThat(metrics.heldCount()).isGreaterThan(heldBefore);
        assertThat(db.status(newer.orderId())).as("neither applied nor overtaken by its cancellation (no tombstone)").isNull();
        given().header("Authorization", OperationsAuth.operator()).get("/dead-letters").then().statusCode(200)
                .body(not(containsString(newerId)));

        // No upgraded instance comes in this test: past the bound the message is dead-lettered, and its partition read on.
        await().atMost(Duration.ofSeconds(40)).untilAsserted(() -> {
            JsonPath letters = given().header("Authorization", OperationsAuth.operator()).get("/dead-letters")
                    .then().statusCode(200).extract().jsonPath();
            assertThat(letters.getString("find { it.messageId == '" + newerId + "' }.reason")).isEqualTo(
                    "schema version 2 of OrderCreated is newer than this consumer reads (v1): upgrade the consumer"
                            + " (held PT10S: no instance that reads it took the queue)");
        });
        await().atMost(Duration.ofSeconds(30)).until(() -> "CANCELLED_FIRST".equals(db.status(newer.orderId())));
    }

    @Test
    void aVersion1EventIsApplied() {
        String sku = db.newProduct(100);
        OrderCreated.V1 older = Broker.order(sku, 5).asV1();

        Broker.publish(older);

        // Within the bound and then some: it may share a partition with a held message of the other test.
        await().atMost(Duration.ofSeconds(40)).until(() -> "RESERVED".equals(db.status(older.orderId())));
        assertThat(db.reserved(sku)).isEqualTo(5);
    }
}
