package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Set;
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
                .containsExactlyInAnyOrder("eventId", "orderId", "customerId", "currency", "lines", "occurredAt");
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
        assertThat(EventSchema.of(OrderCreated.TYPE, 3)).isEmpty();
        assertThat(EventSchema.of("OrderShipped", 1)).isEmpty();
        assertThat(EventSchema.versions(OrderCreated.TYPE)).containsExactly(1, 2);
    }

    @Test
    void aPriceTravelsAsAPlainDecimalStringAndRoundTrips() throws Exception {
        OrderCreated priced = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-42", "USD",
                List.of(new OrderCreated.Line("SKU-APPLE", 2, new BigDecimal("1E+6").setScale(2)),
                        new OrderCreated.Line("SKU-PEAR", 1)), Instant.parse("2026-12-06T10:15:30Z"));
        String json = EventJson.write(priced);
        assertThat(json).contains("\"unitPrice\":\"1000000.00\"").doesNotContain("null");
        assertThat(SCHEMA.violations(bytes(json))).isEmpty();
        assertThat(EventJson.read(bytes(json), OrderCreated.class)).isEqualTo(priced);
    }

    @Test
    void theSchemaRejectsAMissingCurrencyAndANegativePrice() throws Exception {
        ObjectNode json = (ObjectNode) EventJson.mapper().readTree(EventJson.write(sample()));
        json.remove("currency");
        ((ObjectNode) json.withArray("lines").get(0)).put("unitPrice", "-1.00");
        assertThat(SCHEMA.violations(bytes(json.toString()))).hasSize(2)
                .anySatisfy(v -> assertThat(v).contains("currency"))
                .anySatisfy(v -> assertThat(v).contains("/lines/0/unitPrice"));
    }

    @Test
    void aVersion1EventIsReadAsVersion2WithTheDefaultCurrencyAndNoPrices() throws Exception {
        OrderCreated.V1 old = new OrderCreated.V1(UUID.randomUUID(), UUID.randomUUID(), "customer-7",
                List.of(new OrderCreated.V1.Line("SKU-APPLE", 3)), Instant.parse("2026-12-01T08:00:00Z"));
        byte[] payload = bytes(EventJson.write(old));
        assertThat(EventSchema.of(OrderCreated.TYPE, 1).orElseThrow().violations(payload)).isEmpty();

        OrderEvent read = EventSchema.decode(old.eventId().toString(), OrderCreated.TYPE, 1, payload, OrderEvent.class);

        assertThat(read).isEqualTo(new OrderCreated(old.eventId(), old.orderId(), "customer-7", OrderCreated.DEFAULT_CURRENCY,
                List.of(new OrderCreated.Line("SKU-APPLE", 3, null)), old.occurredAt()));
    }

    @Test
    void aVersion2EventIsReadAsItIs() throws Exception {
        OrderCreated event = sample();
        assertThat(EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 2, bytes(EventJson.write(event)), OrderEvent.class))
                .isEqualTo(event);
    }

    @Test
    void toAConsumerThatReadsOnlyVersion1Version2IsNewerNotBroken() {
        OrderCreated event = sample();
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 2, bytes(EventJson.write(event)),
                OrderEvent.class, Set.of(1)))
                .isInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("schema version 2 of OrderCreated is newer than this consumer reads (v1): upgrade the consumer");
    }

    @Test
    void aVersionNewerThanTheBuildKnowsIsNewerToo() {
        OrderCreated event = sample();
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 3, bytes(EventJson.write(event)),
                OrderEvent.class))
                .isInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("schema version 3 of OrderCreated is newer than this consumer reads (v1, v2): upgrade the consumer");
    }

    @Test
    void aVersionMoreThanOneAheadIsBrokenNotNewer() {
        OrderCreated event = sample();
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 99, bytes("{}"), OrderEvent.class))
                .isInstanceOf(EventSchema.InvalidEventException.class)
                .isNotInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("unsupported schema version 99 of OrderCreated: this consumer reads v1, v2");
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 3, bytes(EventJson.write(event)),
                OrderEvent.class, Set.of(1)))
                .isNotInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("unsupported schema version 3 of OrderCreated: this consumer reads v1");
    }

    @Test
    void aVersionOlderThanAnyItReadsIsBrokenNotNewer() {
        OrderCreated event = sample();
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 1, bytes(event.asV1().payloadJson()),
                OrderEvent.class, Set.of(2)))
                .isInstanceOf(EventSchema.InvalidEventException.class)
                .isNotInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("unsupported schema version 1 of OrderCreated: this consumer reads v2");
        assertThatThrownBy(() -> EventSchema.decode(event.eventId().toString(), OrderCreated.TYPE, 0, bytes(EventJson.write(event)),
                OrderEvent.class))
                .isNotInstanceOf(EventSchema.NewerVersionException.class)
                .hasMessage("unsupported schema version 0 of OrderCreated: this consumer reads v1, v2");
    }

    @Test
    void anOrderVersion1CanSayIsWrittenAsVersion1AndReadBackTheSame() throws Exception {
        OrderCreated event = sample();
        OrderCreated.V1 old = event.asV1();
        byte[] payload = bytes(old.payloadJson());
        assertThat(EventSchema.of(OrderCreated.TYPE, 1).orElseThrow().violations(payload)).isEmpty();
        assertThat(old.schemaVersion()).isEqualTo(1);
        assertThat(old.aggregateId()).isEqualTo(event.aggregateId());
        assertThat(EventSchema.decode(old.eventId().toString(), OrderCreated.TYPE, 1, payload, OrderEvent.class)).isEqualTo(event);
    }

    @Test
    void anOrderWithAPriceOrAnotherCurrencyCannotBeWrittenAsVersion1() {
        OrderCreated priced = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "c", OrderCreated.DEFAULT_CURRENCY,
                List.of(new OrderCreated.Line("SKU-APPLE", 1, new BigDecimal("2.50"))), Instant.now());
        OrderCreated dollars = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "c", "USD",
                List.of(new OrderCreated.Line("SKU-APPLE", 1)), Instant.now());
        assertThat(priced.fitsV1()).isFalse();
        assertThat(dollars.fitsV1()).isFalse();
        assertThatThrownBy(priced::asV1).isInstanceOf(IllegalStateException.class);
    }

    private static OrderCreated withLine(String sku, int quantity) {
        return new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-42",
                List.of(new OrderCreated.Line(sku, quantity)), Instant.now());
    }

    private static byte[] bytes(String json) {
        return json.getBytes(StandardCharsets.UTF_8);
    }
}
