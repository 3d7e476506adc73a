package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class OrderCreatedContractTest {

    private static final EventSchema SCHEMA = EventSchema.of(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION).orElseThrow();

    private static OrderCreated sample() {
        return new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-42",
                List.of(new OrderCreated.Line("SKU-APPLE", 2), new OrderCreated.Line("SKU-PEAR", 10_000)),
                Instant.parse("2026-12-02T10:15:30.123456Z"));
    }

    @Test
    void whatTheProducerSerialisesValidatesAgainstTheSchema() throws Exception {
        assertThat(SCHEMA.violations(bytes(EventJson.write(sample())))).isEmpty();
    }

    @Test
    void theSerialisedFormRoundTrips() throws Exception {
        OrderCreated event = sample();
        assertThat(EventJson.read(bytes(EventJson.write(event)), OrderCreated.class)).isEqualTo(event);
    }

    @Test
    void typeAndVersionTravelAsPropertiesNotInThePayload() throws Exception {
        ObjectNode json = (ObjectNode) EventJson.mapper().readTree(EventJson.write(sample()));
        assertThat(json.fieldNames()).toIterable()
                .containsExactlyInAnyOrder("eventId", "orderId", "customerId", "lines", "occurredAt");
    }

    @Test
    void aConsumerToleratesAnAddedOptionalField() throws Exception {
        ObjectNode json = (ObjectNode) EventJson.mapper().readTree(EventJson.write(sample()));
        json.put("couponCode", "WINTER");
        byte[] payload = bytes(json.toString());
        assertThat(SCHEMA.violations(payload)).isEmpty();
        assertThat(EventJson.read(payload, OrderCreated.class).customerId()).isEqualTo("customer-42");
    }

    @Test
    void theSchemaRejectsAZeroQuantity() throws Exception {
        assertThat(SCHEMA.violations(bytes(EventJson.write(withLine("SKU-APPLE", 0)))))
                .singleElement().asString().contains("/lines/0/quantity");
    }

    @Test
    void theSchemaRejectsAnAbsurdQuantity() throws Exception {
        assertThat(SCHEMA.violations(bytes(EventJson.write(withLine("SKU-APPLE", OrderCreated.MAX_QUANTITY + 1)))))
                .singleElement().asString().contains("/lines/0/quantity");
    }

    @Test
    void theSchemaRejectsABlankSku() throws Exception {
        assertThat(SCHEMA.violations(bytes(EventJson.write(withLine("   ", 1)))))
                .singleElement().asString().contains("/lines/0/sku");
    }

    @Test
    void theSchemaRejectsAnOrderWithoutLines() throws Exception {
        OrderCreated empty = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "c", List.of(), Instant.now());
        assertThat(SCHEMA.violations(bytes(EventJson.write(empty)))).singleElement().asString().contains("lines");
    }

    @Test
    void theSchemaRejectsAMissingEventId() throws Exception {
        ObjectNode json = (ObjectNode) EventJson.mapper().readTree(EventJson.write(sample()));
        json.remove("eventId");
        assertThat(SCHEMA.violations(bytes(json.toString()))).singleElement().asString().contains("eventId");
    }

    @Test
    void anUnknownVersionHasNoContract() {
        assertThat(EventSchema.of(OrderCreated.TYPE, 2)).isEmpty();
        assertThat(EventSchema.of("OrderShipped", 1)).isEmpty();
    }

    private static OrderCreated withLine(String sku, int quantity) {
        return new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-42",
                List.of(new OrderCreated.Line(sku, quantity)), Instant.now());
    }

    private static byte[] bytes(String json) {
        return json.getBytes(StandardCharsets.UTF_8);
    }
}
