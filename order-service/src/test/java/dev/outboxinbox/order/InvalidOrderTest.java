package dev.outboxinbox.order;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@OrderServiceTest
class InvalidOrderTest {

    @Inject
    OrderDatabase db;

    static Stream<Arguments> invalidBodies() {
        String line = "{\"sku\": \"SKU-APPLE\", \"quantity\": 1}";
        String tooManyLines = IntStream.range(0, 101).mapToObj(i -> "{\"sku\": \"SKU-" + i + "\", \"quantity\": 1}")
                .collect(Collectors.joining(","));
        return Stream.of(
                Arguments.of("malformed JSON", "{\"customerId\": \"c\", \"lines\": [", "body"),
                Arguments.of("not an object", "[1, 2]", "body"),
                Arguments.of("empty body", "", "body"),
                Arguments.of("trailing garbage", "{\"customerId\": \"c\", \"lines\": [" + line + "]} x", "body"),
                Arguments.of("missing customer", "{\"lines\": [" + line + "]}", "customerId"),
                Arguments.of("blank customer", "{\"customerId\": \"  \", \"lines\": [" + line + "]}", "customerId"),
                Arguments.of("NUL in customer", "{\"customerId\": \"a\\u0000b\", \"lines\": [" + line + "]}", "customerId"),
                Arguments.of("newline in customer", "{\"customerId\": \"a\\nb\", \"lines\": [" + line + "]}", "customerId"),
                Arguments.of("NUL in SKU", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"SKU-\\u0000\", \"quantity\": 1}]}", "lines[0].sku"),
                Arguments.of("oversized customer", "{\"customerId\": \"" + "c".repeat(65) + "\", \"lines\": [" + line + "]}", "customerId"),
                Arguments.of("no lines", "{\"customerId\": \"c\", \"lines\": []}", "lines"),
                Arguments.of("missing lines", "{\"customerId\": \"c\"}", "lines"),
                Arguments.of("too many lines", "{\"customerId\": \"c\", \"lines\": [" + tooManyLines + "]}", "lines"),
                Arguments.of("null line", "{\"customerId\": \"c\", \"lines\": [null]}", "lines[0]"),
                Arguments.of("zero quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 0}]}", "lines[0].quantity"),
                Arguments.of("negative quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": -3}]}", "lines[0].quantity"),
                Arguments.of("absurd quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 10001}]}", "lines[0].quantity"),
                Arguments.of("overflowing quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 99999999999}]}", "lines[0].quantity"),
                Arguments.of("fractional quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1.5}]}", "lines[0].quantity"),
                Arguments.of("quantity as text", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": \"2\"}]}", "lines[0].quantity"),
                Arguments.of("missing quantity", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\"}]}", "lines[0].quantity"),
                Arguments.of("blank SKU", "{\"customerId\": \"c\", \"lines\": [" + line + ", {\"sku\": \" \", \"quantity\": 1}]}", "lines[1].sku"),
                Arguments.of("missing SKU", "{\"customerId\": \"c\", \"lines\": [{\"quantity\": 1}]}", "lines[0].sku"),
                Arguments.of("repeated SKU", "{\"customerId\": \"c\", \"lines\": [" + line + ", " + line + "]}", "lines[1].sku"),
                Arguments.of("lower-case currency", "{\"customerId\": \"c\", \"currency\": \"eur\", \"lines\": [" + line + "]}", "currency"),
                Arguments.of("currency not a code", "{\"customerId\": \"c\", \"currency\": \"EURO\", \"lines\": [" + line + "]}", "currency"),
                Arguments.of("negative price", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1, \"unitPrice\": -0.01}]}",
                        "lines[0].unitPrice"),
                Arguments.of("price in thousandths", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1, \"unitPrice\": 1.234}]}",
                        "lines[0].unitPrice"),
                Arguments.of("absurd price", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1, \"unitPrice\": 12345678901}]}",
                        "lines[0].unitPrice"),
                Arguments.of("price as text", "{\"customerId\": \"c\", \"lines\": [{\"sku\": \"A\", \"quantity\": 1, \"unitPrice\": \"2.50\"}]}",
                        "lines[0].unitPrice"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidBodies")
    void anInvalidOrderIsA400ProblemNamingTheFieldAndWritesNothing(String name, String body, String field) {
        long orders = db.orders();
        long events = db.outboxRows();

        given().contentType(ContentType.JSON).body(body).post("/orders")
                .then().statusCode(400)
                .contentType("application/problem+json")
                .body("status", equalTo(400))
                .body("errors.field", hasItem(field));

        assertThat(db.orders()).isEqualTo(orders);
        assertThat(db.outboxRows()).isEqualTo(events);
    }
}
