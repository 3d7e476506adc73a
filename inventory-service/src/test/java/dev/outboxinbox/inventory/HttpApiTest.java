package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.hasKey;

import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The HTTP API as a newcomer meets it: the catalogue, its edges, every error a problem document, the API described. */
@InventoryServiceTest
class HttpApiTest {

    private static final Pattern NEXT = Pattern.compile("<([^>]+)>;\\s*rel=\"next\"");

    @Inject
    InventoryDatabase db;

    @Test
    void theCatalogueIsListedPageByPageFollowingTheNextLinks() {
        db.newProduct(1);
        db.newProduct(2);
        db.newProduct(3);
        List<String> expected = db.skus();

        List<String> listed = new ArrayList<>();
        String page = "/products?limit=2";
        int pages = 0;
        while (page != null) {
            Response response = given().urlEncodingEnabled(false).get(page);
            response.then().statusCode(200).contentType("application/json");
            listed.addAll(response.jsonPath().getList("sku", String.class));
            Matcher next = NEXT.matcher(String.valueOf(response.header("Link")));
            page = next.find() ? next.group(1) : null;
            assertThat(++pages).as("pages followed").isLessThanOrEqualTo(expected.size() / 2 + 1);
        }
        assertThat(listed).isEqualTo(expected);
        assertThat(listed).contains("SKU-APPLE", "SKU-DURIAN");
    }

    @Test
    void aPageShowsEachProductsStock() {
        given().get("/products").then().statusCode(200)
                .body("find { it.sku == 'SKU-APPLE' }.name", equalTo("Apple"))
                .body("find { it.sku == 'SKU-DURIAN' }.available", equalTo(0));
    }

    @ParameterizedTest
    @ValueSource(strings = {"limit=0", "limit=501", "limit=ten", "after=%00"})
    void aBadPageRequestIsA400Problem(String query) {
        given().urlEncodingEnabled(false).get("/products?" + query).then().statusCode(400)
                .contentType("application/problem+json").body("status", equalTo(400));
    }

    /** PostgreSQL refuses a NUL in text: the lookup must not reach it (it was a 500). */
    @ParameterizedTest
    @ValueSource(strings = {"%00", "SKU-%00APPLE", "SKU-%0A", "A%7F"})
    void aSkuWithAControlCharacterNamesNoProduct(String sku) {
        given().urlEncodingEnabled(false).get("/products/" + sku).then().statusCode(404)
                .contentType("application/problem+json").body("detail", containsString("No product with SKU"));
    }

    @Test
    void anOverlongSkuNamesNoProduct() {
        given().get("/products/" + "S".repeat(65)).then().statusCode(404).contentType("application/problem+json");
    }

    @Test
    void errorsOfTheFrameworkAreProblemsToo() {
        given().get("/nothing/here").then().statusCode(404).contentType("application/problem+json");
        given().post("/products").then().statusCode(405).contentType("application/problem+json");
        given().accept("application/xml").get("/products").then().statusCode(406).contentType("application/problem+json");
    }

    @Test
    void theApiIsDescribedByOpenApiAndSwaggerUi() {
        given().accept("application/json").get("/q/openapi").then().statusCode(200)
                .body("info.title", equalTo("inventory-service"))
                .body("paths", hasKey("/products"))
                .body("paths", hasKey("/products/{sku}"))
                .body("paths", hasKey("/orders/{orderId}/reservation"))
                .body("paths", hasKey("/dead-letters"))
                .body("paths.'/products'.get.parameters.name", hasItem("after"));
        given().get("/q/swagger-ui/").then().statusCode(200).contentType(containsString("text/html"));
    }
}
