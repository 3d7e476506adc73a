package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import dev.outboxinbox.order.outbox.OutboxPurge;
import jakarta.inject.Inject;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@OrderServiceTest
class OperationsTest {

    @Inject
    OrderDatabase db;

    @Inject
    OutboxPurge purge;

    @Test
    void readinessReportsTheDatabase() {
        given().get("/q/health/ready").then().statusCode(200)
                .body("status", equalTo("UP"))
                .body("checks.name", hasItem("Database connections health check"));
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
    void thePublicationForTheRelayPublishesOutboxInsertsOnly() {
        assertThat(db.rows("SELECT pubinsert, pubupdate, pubdelete FROM pg_publication WHERE pubname = 'outbox_publication'"))
                .singleElement().satisfies(row -> assertThat(row)
                        .containsEntry("pubinsert", true).containsEntry("pubupdate", false).containsEntry("pubdelete", false));
        assertThat(db.rows("SELECT tablename FROM pg_publication_tables WHERE pubname = 'outbox_publication'"))
                .extracting(row -> row.get("tablename")).containsExactly("outbox");
    }
}
