package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import dev.outboxinbox.order.domain.IdempotencyKeyPurge;
import dev.outboxinbox.outbox.OutboxPurge;
import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.Prometheus;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@OrderServiceTest
class OperationsTest {

    @Inject
    OrderDatabase db;

    @Inject
    OutboxPurge purge;

    @Inject
    IdempotencyKeyPurge keyPurge;

    @Test
    void readinessReportsTheDatabase() {
        given().get("/q/health/ready").then().statusCode(200)
                .body("status", equalTo("UP"))
                .body("checks.name", hasItem("Database connections health check"));
    }

    @Test
    void theMetricsCountOrdersPlacedReplaysAndOutboxRowsWrittenAndPurged() {
        String before = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
        String key = "metrics-" + UUID.randomUUID();
        place(key);
        place(key);
        place("metrics-" + UUID.randomUUID());
        given().contentType(ContentType.JSON).body("{\"customerId\": \"\", \"lines\": []}").post("/orders")
                .then().statusCode(400);
        db.execute("INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                + " VALUES ('" + UUID.randomUUID() + "', 'orders', 'old', 'OrderCreated', 1, '{}', now() - interval '2 hours')");
        long purged = purge.purge();

        String after = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
        assertThat(Prometheus.moved(before, after, "orders_placed_total")).isEqualTo(2);
        assertThat(Prometheus.moved(before, after, "orders_replayed_total")).isEqualTo(1);
        assertThat(Prometheus.moved(before, after, "outbox_rows_written_total", "aggregate_type", "orders"))
                .as("one row per order placed; none for the replay or the refused request").isEqualTo(2);
        assertThat(purged).isPositive();
        assertThat(Prometheus.moved(before, after, "outbox_rows_purged_total")).isEqualTo(purged);
    }

    @Test
    void thePurgeDeletesOutboxRowsOlderThanTheRetentionAndKeepsTheRest() {
        UUID old = UUID.randomUUID();
        UUID recent = UUID.randomUUID();
        db.execute("""
                INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at) VALUES
                  ('%s', 'orders', 'x', 'OrderCreated', 1, '{}', now() - interval '2 hours'),
                  ('%s', 'orders', 'y', 'OrderCreated', 1, '{}', now())""".formatted(old, recent));

        assertThat(purge.purge()).isPositive();

        assertThat(db.count("SELECT count(*) FROM outbox WHERE id = ?", old)).isZero();
        assertThat(db.count("SELECT count(*) FROM outbox WHERE id = ?", recent)).isOne();
    }

    @Test
    void anIdempotencyKeyPastItsRetentionIsForgottenAndPlacesANewOrder() {
        String expired = "expired-" + UUID.randomUUID();
        String fresh = "fresh-" + UUID.randomUUID();
        String firstOrder = place(expired);
        place(fresh);
        db.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE idempotency_key = '" + expired + "'");

        assertThat(keyPurge.purge()).isPositive();

        assertThat(db.count("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = ?", expired)).isZero();
        assertThat(db.count("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = ?", fresh)).isOne();
        assertThat(place(expired)).as("a forgotten key is a new request").isNotEqualTo(firstOrder);
    }

    private static String place(String key) {
        return given().contentType(ContentType.JSON).header("Idempotency-Key", key)
                .body(PlacingAnOrderTest.body("retention-" + key)).post("/orders")
                .then().statusCode(201).extract().path("id");
    }

    @Test
    void thePublicationForTheRelayPublishesOutboxInsertsOnly() {
        assertThat(db.rows("SELECT pubinsert, pubupdate, pubdelete FROM pg_publication WHERE pubname = 'outbox_publication'"))
                .singleElement().satisfies(row -> assertThat(row)
                        .containsEntry("pubinsert", true).containsEntry("pubupdate", false).containsEntry("pubdelete", false));
        assertThat(db.rows("SELECT tablename FROM pg_publication_tables WHERE pubname = 'outbox_publication'"))
                .extracting(row -> row.get("tablename")).containsExactly("outbox");
    }
}
