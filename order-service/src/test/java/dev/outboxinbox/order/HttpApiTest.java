package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasKey;

import io.restassured.http.ContentType;
import org.junit.jupiter.api.Test;

/** Every error a problem document, the framework's own included, and the API described without the README. */
@OrderServiceTest
class HttpApiTest {

    @Test
    void errorsOfTheFrameworkAreProblemsToo() {
        given().get("/nothing/here").then().statusCode(404).contentType("application/problem+json");
        given().get("/orders/%00").then().statusCode(404).contentType("application/problem+json");
        given().delete("/orders").then().statusCode(405).contentType("application/problem+json");
        given().contentType(ContentType.TEXT).body("x").post("/orders").then().statusCode(415)
                .contentType("application/problem+json").body("status", equalTo(415));
    }

    /** The demo page's state shows anyone what the monitor reads: off unless DEMO_ENABLED (compose and deploy/local set it). */
    @Test
    void theDemoPagesStateIsOffUnlessAskedFor() {
        given().get("/demo/state").then().statusCode(404).contentType("application/problem+json")
                .body("detail", containsString("DEMO_ENABLED=true"));
    }

    @Test
    void theApiIsDescribedByOpenApiAndSwaggerUi() {
        given().accept("application/json").get("/q/openapi").then().statusCode(200)
                .body("info.title", equalTo("order-service"))
                .body("paths", hasKey("/orders"))
                .body("paths", hasKey("/orders/{id}"))
                .body("components.schemas", hasKey("PlaceOrderRequest"));
        given().get("/q/swagger-ui/").then().statusCode(200).contentType(containsString("text/html"));
    }

    /** The events, as the contract module describes them (AsyncApiDocumentTest keeps it equal to the code): served beside the OpenAPI. */
    @Test
    void theEventsAreDescribedByAnAsyncApiDocument() {
        given().get("/asyncapi.json").then().statusCode(200).contentType(containsString("application/json"))
                .body("asyncapi", equalTo("3.1.0"))
                .body("channels", hasKey("orders"))
                .body("components.messages", hasKey("OrderCreated.v1"));
    }
}
