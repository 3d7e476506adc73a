package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;

/**
 * A request that gets no database connection is refused with 503 and Retry-After, as a problem document that
 * says nothing was done, and nothing was: its Idempotency-Key stays free for the retry. Here the pool has two
 * connections and waits 1 s for one; two orders hold both, blocked behind a lock this test takes on the orders
 * table from a connection of its own, and the third order finds none.
 */
@OrderServiceTest
@TestProfile(PoolExhaustedTest.TwoConnections.class)
class PoolExhaustedTest {

    public static final class TwoConnections implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.datasource.jdbc.max-size", "2", "quarkus.datasource.jdbc.acquisition-timeout", "1S");
        }
    }

    @Inject
    OrderDatabase db;

    @Test
    void anOrderThatGetsNoConnectionIsRefusedWith503AndNothingIsWritten() throws Exception {
        String run = "no-connection-" + System.nanoTime();
        List<CompletableFuture<Integer>> holding;
        try (Connection lock = ownConnection(); Statement statement = lock.createStatement()) {
            lock.setAutoCommit(false);
            // Reads go on; inserts into orders wait, each with its pool connection in hand.
            statement.execute("LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE");
            holding = IntStream.range(0, 2).mapToObj(i -> CompletableFuture.supplyAsync(() -> place(run + "-holding-" + i, run)))
                    .toList();
            await().atMost(Duration.ofSeconds(10)).until(() -> waitingOnOrders(statement) == 2);

            given().contentType(ContentType.JSON).header("Idempotency-Key", run + "-refused")
                    .body(PlacingAnOrderTest.body(run + "-refused")).post("/orders")
                    .then().statusCode(503)
                    .contentType("application/problem+json")
                    .header("Retry-After", "2")
                    .body("status", equalTo(503))
                    .body("detail", containsString("Nothing was done"))
                    .body("detail", containsString("acquisition timeout"));
            lock.rollback();
        }
        assertThat(holding.stream().map(CompletableFuture::join).toList()).as("the two orders that held the connections")
                .containsExactly(201, 201);
        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", run + "-refused")).isZero();
        assertThat(db.count("SELECT count(*) FROM idempotency_keys WHERE idempotency_key = ?", run + "-refused")).isZero();

        // Nothing was claimed: the retry with the same key places the order, once.
        given().contentType(ContentType.JSON).header("Idempotency-Key", run + "-refused")
                .body(PlacingAnOrderTest.body(run + "-refused")).post("/orders")
                .then().statusCode(201);
        assertThat(db.count("SELECT count(*) FROM orders WHERE customer_id = ?", run + "-refused")).isOne();
    }

    private static int place(String key, String run) {
        return given().contentType(ContentType.JSON).header("Idempotency-Key", key).body(PlacingAnOrderTest.body(run))
                .post("/orders").then().extract().statusCode();
    }

    private static long waitingOnOrders(Statement statement) throws SQLException {
        try (ResultSet rs = statement.executeQuery(
                "SELECT count(*) FROM pg_locks WHERE relation = 'orders'::regclass AND NOT granted")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Outside the service's pool, which has only the two connections the orders hold. */
    private static Connection ownConnection() throws SQLException {
        var config = ConfigProvider.getConfig();
        return DriverManager.getConnection(config.getValue("quarkus.datasource.jdbc.url", String.class),
                config.getValue("quarkus.datasource.username", String.class),
                config.getOptionalValue("quarkus.datasource.password", String.class).orElse(""));
    }
}
