package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The cancellation's two events: OrderCancelled (order-service → inventory) and its reply InventoryReleased. */
class CancellationContractTest {

    private static final UUID ORDER = UUID.randomUUID();

    @Test
    void anOrderCancelledIsAnEventOfTheOrderInTheOrdersPartition() throws Exception {
        OrderCancelled cancelled = new OrderCancelled(UUID.randomUUID(), ORDER, Instant.parse("2026-12-05T10:15:30.123456Z"));
        OrderCreated created = new OrderCreated(UUID.randomUUID(), ORDER, "c", List.of(new OrderCreated.Line("SKU-APPLE", 1)), Instant.now());

        assertThat(cancelled.aggregateType()).isEqualTo(created.aggregateType()).isEqualTo(Topology.ORDERS_EXCHANGE);
        assertThat(cancelled.aggregateId()).as("the partition key: both events of one order hash alike")
                .isEqualTo(created.aggregateId()).isEqualTo(ORDER.toString());
        assertThat(Topology.INVENTORY_BINDINGS).contains(OrderCancelled.TYPE, OrderCreated.TYPE);
        assertThat(cancelled.occurredAt()).isEqualTo(cancelled.cancelledAt());

        byte[] json = bytes(EventJson.write(cancelled));
        assertThat(schema(OrderCancelled.TYPE).violations(json)).isEmpty();
        assertThat(((ObjectNode) EventJson.mapper().readTree(json)).fieldNames()).toIterable()
                .containsExactlyInAnyOrder("eventId", "orderId", "cancelledAt");
        assertThat(EventSchema.decode(cancelled.eventId().toString(), OrderCancelled.TYPE, 1, json, OrderEvent.class))
                .isEqualTo(cancelled);
    }

    @Test
    void anInventoryReleasedNamesWhatWasReleasedAndMayNameNothing() throws Exception {
        InventoryReleased released = new InventoryReleased(UUID.randomUUID(), ORDER,
                List.of(new InventoryReleased.Line("SKU-APPLE", 2), new InventoryReleased.Line("SKU-PEAR", 1)), Instant.now());
        InventoryReleased nothing = new InventoryReleased(UUID.randomUUID(), ORDER, List.of(), Instant.now());

        for (InventoryReleased reply : List.of(released, nothing)) {
            byte[] json = bytes(EventJson.write(reply));
            assertThat(schema(InventoryReleased.TYPE).violations(json)).isEmpty();
            assertThat(EventSchema.decode(reply.eventId().toString(), InventoryReleased.TYPE, 1, json, InventoryEvent.class))
                    .isEqualTo(reply);
        }
        assertThat(Topology.ORDER_REPLIES_BINDINGS).contains(InventoryReleased.TYPE);
        assertThat(released.aggregateType()).isEqualTo(Topology.INVENTORY_EXCHANGE);
    }

    @Test
    void theSchemasRefuseWhatACancellationCannotBe() throws Exception {
        ObjectNode noOrder = (ObjectNode) EventJson.mapper().readTree(EventJson.write(new OrderCancelled(UUID.randomUUID(), ORDER, Instant.now())));
        noOrder.remove("orderId");
        assertThat(schema(OrderCancelled.TYPE).violations(bytes(noOrder.toString()))).singleElement().asString().contains("orderId");

        InventoryReleased zero = new InventoryReleased(UUID.randomUUID(), ORDER, List.of(new InventoryReleased.Line("SKU-APPLE", 0)), Instant.now());
        assertThat(schema(InventoryReleased.TYPE).violations(bytes(EventJson.write(zero))))
                .singleElement().asString().contains("/lines/0/quantity");
    }

    @Test
    void aConsumerOfOrderEventsTakesACancellationAndAReplyConsumerDoesNot() {
        OrderCancelled cancelled = new OrderCancelled(UUID.randomUUID(), ORDER, Instant.now());
        byte[] json = bytes(EventJson.write(cancelled));
        assertThatThrownBy(() -> EventSchema.decode(cancelled.eventId().toString(), OrderCancelled.TYPE, 1, json, InventoryEvent.class))
                .isInstanceOf(EventSchema.InvalidEventException.class).hasMessageContaining("unknown event type 'OrderCancelled'");
    }

    private static EventSchema schema(String type) {
        return EventSchema.of(type, 1).orElseThrow();
    }

    private static byte[] bytes(String json) {
        return json.getBytes(StandardCharsets.UTF_8);
    }
}
