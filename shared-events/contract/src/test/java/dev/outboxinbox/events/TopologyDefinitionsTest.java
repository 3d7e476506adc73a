package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
    void everyInventoryPartitionHasTheArgumentsTheServiceDeclares() {
        assertThat(Topology.inventoryPartitions()).hasSize(Topology.INVENTORY_PARTITIONS);
        for (String partition : Topology.inventoryPartitions()) {
            JsonNode queue = named("queues", partition);
            assertThat(queue.get("durable").asBoolean()).isTrue();
            assertThat(new ObjectMapper().convertValue(queue.get("arguments"), Map.class))
                    .isEqualTo(Topology.inventoryPartitionArguments());
            assertThat(DEFINITIONS.get("bindings")).filteredOn(b -> b.get("destination").asText().equals(partition))
                    .singleElement().satisfies(b -> {
                        assertThat(b.get("source").asText()).isEqualTo(Topology.INVENTORY_QUEUE);
                        assertThat(b.get("routing_key").asText()).isEqualTo("1");
                    });
        }
        assertThat(DEFINITIONS.get("queues")).filteredOn(q -> q.get("name").asText().startsWith(Topology.INVENTORY_QUEUE + "."))
                .extracting(q -> q.get("name").asText())
                .containsExactlyInAnyOrderElementsOf(concat(Topology.inventoryPartitions(), Topology.INVENTORY_DEAD_LETTER_QUEUE));
    }

    @Test
    void thePartitionsExchangeHashesTheAggregateId() {
        JsonNode exchange = named("exchanges", Topology.INVENTORY_QUEUE);
        assertThat(exchange.get("type").asText()).isEqualTo("x-consistent-hash");
        assertThat(exchange.get("durable").asBoolean()).isTrue();
        assertThat(exchange.get("arguments").get("hash-header").asText()).isEqualTo(Topology.INVENTORY_PARTITION_KEY);
    }

    private static List<String> concat(List<String> list, String one) {
        List<String> all = new ArrayList<>(list);
        all.add(one);
        return all;
    }

    @Test
    void theDeadLetterQueueHasTheArgumentsTheServiceDeclares() {
        assertThat(named("exchanges", Topology.INVENTORY_DEAD_LETTER_EXCHANGE).get("type").asText()).isEqualTo("fanout");
        JsonNode queue = named("queues", Topology.INVENTORY_DEAD_LETTER_QUEUE);
        assertThat(new ObjectMapper().convertValue(queue.get("arguments"), Map.class))
                .isEqualTo(Topology.deadLetterQueueArguments());
    }

    @Test
    void theBindingsRouteAnOrdersEventsToInventoryAndDeadLettersToTheirQueue() {
        // Inventory's bindings to the orders exchange (other services may bind their own queues there too).
        assertThat(DEFINITIONS.get("bindings"))
                .filteredOn(b -> b.get("source").asText().equals(Topology.ORDERS_EXCHANGE)
                        && b.get("destination").asText().equals(Topology.INVENTORY_QUEUE))
                .allSatisfy(binding -> assertThat(binding.get("destination_type").asText()).isEqualTo("exchange"))
                .extracting(b -> b.get("routing_key").asText())
                .containsExactlyInAnyOrderElementsOf(Topology.INVENTORY_BINDINGS)
                .contains(Topology.INVENTORY_BINDING);
        assertThat(DEFINITIONS.get("bindings")).anySatisfy(binding -> {
            assertThat(binding.get("source").asText()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_EXCHANGE);
            assertThat(binding.get("destination").asText()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        });
    }

    @Test
    void deadLettersGoBackThroughTheRetryExchangeToTheInventoryPartitionsAlone() {
        assertThat(named("exchanges", Topology.INVENTORY_RETRY_EXCHANGE).get("type").asText()).isEqualTo("fanout");
        assertThat(DEFINITIONS.get("bindings")).filteredOn(b -> b.get("source").asText().equals(Topology.INVENTORY_RETRY_EXCHANGE))
                .singleElement().satisfies(b -> {
                    assertThat(b.get("destination").asText()).isEqualTo(Topology.INVENTORY_QUEUE);
                    assertThat(b.get("destination_type").asText()).isEqualTo("exchange");
                });
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
                .filteredOn(b -> b.get("source").asText().equals(Topology.INVENTORY_EXCHANGE)
                        && b.get("destination").asText().equals(Topology.ORDER_REPLIES_QUEUE))
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
