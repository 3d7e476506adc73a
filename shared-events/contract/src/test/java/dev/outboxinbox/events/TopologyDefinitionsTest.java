package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;

/**
 * docker compose loads deploy/rabbitmq/definitions.json; the services declare the same topology
 * from {@link Topology}. RabbitMQ refuses a redeclaration with other arguments, so the two must
 * agree exactly.
 */
class TopologyDefinitionsTest {

    private static final JsonNode DEFINITIONS = read();

    private static JsonNode read() {
        try {
            return new ObjectMapper().readTree(Path.of("..", "..", "deploy", "rabbitmq", "definitions.json").toFile());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode named(String section, String name) {
        return StreamSupport.stream(DEFINITIONS.get(section).spliterator(), false)
                .filter(node -> node.get("name").asText().equals(name))
                .findFirst().orElseThrow(() -> new AssertionError(section + " has no " + name));
    }

    @Test
    void theOrdersExchangeIsADurableTopicExchange() {
        JsonNode exchange = named("exchanges", Topology.ORDERS_EXCHANGE);
        assertThat(exchange.get("type").asText()).isEqualTo("topic");
        assertThat(exchange.get("durable").asBoolean()).isTrue();
    }

    @Test
    void theInventoryQueueHasTheArgumentsTheServiceDeclares() {
        JsonNode queue = named("queues", Topology.INVENTORY_QUEUE);
        assertThat(queue.get("durable").asBoolean()).isTrue();
        assertThat(new ObjectMapper().convertValue(queue.get("arguments"), Map.class))
                .isEqualTo(Topology.inventoryQueueArguments());
    }

    @Test
    void theDeadLetterQueueHasTheArgumentsTheServiceDeclares() {
        assertThat(named("exchanges", Topology.INVENTORY_DEAD_LETTER_EXCHANGE).get("type").asText()).isEqualTo("fanout");
        JsonNode queue = named("queues", Topology.INVENTORY_DEAD_LETTER_QUEUE);
        assertThat(new ObjectMapper().convertValue(queue.get("arguments"), Map.class))
                .isEqualTo(Topology.deadLetterQueueArguments());
    }

    @Test
    void theBindingsRouteOrderCreatedToInventoryAndDeadLettersToTheirQueue() {
        assertThat(DEFINITIONS.get("bindings")).anySatisfy(binding -> {
            assertThat(binding.get("source").asText()).isEqualTo(Topology.ORDERS_EXCHANGE);
            assertThat(binding.get("destination").asText()).isEqualTo(Topology.INVENTORY_QUEUE);
            assertThat(binding.get("routing_key").asText()).isEqualTo(Topology.INVENTORY_BINDING);
        });
        assertThat(DEFINITIONS.get("bindings")).anySatisfy(binding -> {
            assertThat(binding.get("source").asText()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_EXCHANGE);
            assertThat(binding.get("destination").asText()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        });
    }

    @Test
    void deadLettersGoBackThroughTheRetryExchangeToTheInventoryQueueAlone() {
        assertThat(named("exchanges", Topology.INVENTORY_RETRY_EXCHANGE).get("type").asText()).isEqualTo("fanout");
        assertThat(DEFINITIONS.get("bindings")).filteredOn(b -> b.get("source").asText().equals(Topology.INVENTORY_RETRY_EXCHANGE))
                .singleElement().satisfies(b -> assertThat(b.get("destination").asText()).isEqualTo(Topology.INVENTORY_QUEUE));
    }

    @Test
    void theRelaysParkingQueueHasTheArgumentsTheRelayDeclares() {
        assertThat(named("exchanges", Topology.RELAY_PARKING_EXCHANGE).get("type").asText()).isEqualTo("fanout");
        JsonNode queue = named("queues", Topology.RELAY_PARKING_QUEUE);
        assertThat(new ObjectMapper().convertValue(queue.get("arguments"), Map.class))
                .isEqualTo(Topology.relayParkingQueueArguments());
        assertThat(DEFINITIONS.get("bindings")).anySatisfy(binding -> {
            assertThat(binding.get("source").asText()).isEqualTo(Topology.RELAY_PARKING_EXCHANGE);
            assertThat(binding.get("destination").asText()).isEqualTo(Topology.RELAY_PARKING_QUEUE);
        });
    }

    @Test
    void inventorysRepliesReachOrderServicesQueueWithTheArgumentsItDeclares() {
        JsonNode exchange = named("exchanges", Topology.INVENTORY_EXCHANGE);
        assertThat(exchange.get("type").asText()).isEqualTo("topic");
        assertThat(exchange.get("durable").asBoolean()).isTrue();
        assertThat(new ObjectMapper().convertValue(named("queues", Topology.ORDER_REPLIES_QUEUE).get("arguments"), Map.class))
                .isEqualTo(Topology.orderRepliesQueueArguments());
        assertThat(new ObjectMapper().convertValue(named("queues", Topology.ORDER_DEAD_LETTER_QUEUE).get("arguments"), Map.class))
                .isEqualTo(Topology.deadLetterQueueArguments());
        assertThat(DEFINITIONS.get("bindings"))
                .filteredOn(b -> b.get("source").asText().equals(Topology.INVENTORY_EXCHANGE))
                .allSatisfy(b -> assertThat(b.get("destination").asText()).isEqualTo(Topology.ORDER_REPLIES_QUEUE))
                .extracting(b -> b.get("routing_key").asText())
                .containsExactlyInAnyOrderElementsOf(Topology.ORDER_REPLIES_BINDINGS);
        assertThat(DEFINITIONS.get("bindings")).anySatisfy(binding -> {
            assertThat(binding.get("source").asText()).isEqualTo(Topology.ORDER_DEAD_LETTER_EXCHANGE);
            assertThat(binding.get("destination").asText()).isEqualTo(Topology.ORDER_DEAD_LETTER_QUEUE);
        });
        assertThat(DEFINITIONS.get("bindings")).filteredOn(b -> b.get("source").asText().equals(Topology.ORDER_RETRY_EXCHANGE))
                .singleElement().satisfies(b -> assertThat(b.get("destination").asText()).isEqualTo(Topology.ORDER_REPLIES_QUEUE));
    }
}
