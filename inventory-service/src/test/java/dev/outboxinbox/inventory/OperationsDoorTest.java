package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.equalToIgnoringCase;

import dev.outboxinbox.testing.OperationsAuth;
import org.junit.jupiter.api.Test;

/**
 * The inbox library's operations endpoints (dead letters) and /q/metrics behind their door: nobody
 * gets in without a credential, the monitor reads counts but no payload and re-drives nothing, the
 * operator does everything; health and the business API stay open. Refusals are problem documents.
 */
@InventoryServiceTest
class OperationsDoorTest {

    @Test
    void withoutACredentialTheOperationsEndpointsAndTheMetricsAreRefused() {
        for (String path : new String[] {"/dead-letters", "/dead-letters/summary"}) {
            given().get(path).then().statusCode(401).contentType("application/problem+json")
                    .header("WWW-Authenticate", equalToIgnoringCase("Basic realm=\"operations\""))
                    .body("status", equalTo(401)).body("detail", containsString("operators"));
        }
        given().post("/dead-letters/redeliver").then().statusCode(401).contentType("application/problem+json");
        given().post("/dead-letters/redeliver?messageId=any").then().statusCode(401);
        // Refused by Quarkus's HTTP permission, before the application: no problem document, the same challenge.
        given().get("/q/metrics").then().statusCode(401).header("WWW-Authenticate", equalToIgnoringCase("Basic realm=\"operations\""));
    }

    @Test
    void aWrongPasswordIsRefusedLikeNone() {
        String wrong = OperationsAuth.basic("operator", OperationsAuth.OPERATOR_PASSWORD + "x");
        given().header("Authorization", wrong).get("/dead-letters").then().statusCode(401)
                .contentType("application/problem+json");
        given().header("Authorization", wrong).post("/dead-letters/redeliver").then().statusCode(401);
        given().header("Authorization", OperationsAuth.basic("nobody", "secret")).get("/dead-letters/summary")
                .then().statusCode(401);
    }

    @Test
    void theMonitorReadsCountsButNeitherPayloadsNorReDrives() {
        given().header("Authorization", OperationsAuth.monitor()).get("/dead-letters/summary").then().statusCode(200)
                .body("queue", equalTo("inventory.orders.dead-letter"));
        given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200);
        given().header("Authorization", OperationsAuth.monitor()).get("/dead-letters").then().statusCode(403)
                .contentType("application/problem+json").body("status", equalTo(403));
        given().header("Authorization", OperationsAuth.monitor()).post("/dead-letters/redeliver").then().statusCode(403)
                .contentType("application/problem+json");
    }

    @Test
    void theOperatorGetsEverythingAndHealthAndTheBusinessApiStayOpen() {
        given().header("Authorization", OperationsAuth.operator()).get("/dead-letters").then().statusCode(200);
        given().header("Authorization", OperationsAuth.operator()).get("/dead-letters/summary").then().statusCode(200);
        given().header("Authorization", OperationsAuth.operator()).get("/q/metrics").then().statusCode(200);
        given().get("/q/health/live").then().statusCode(200);
        given().get("/products?limit=1").then().statusCode(200);
    }
}
