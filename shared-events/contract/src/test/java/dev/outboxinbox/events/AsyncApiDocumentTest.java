package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The wire contract as an AsyncAPI 3 document, made from what the code uses ({@link Topology},
 * {@link MessageHeaders}, the JSON Schemas of every version), so the two cannot drift: this test fails
 * when the checked-in document is not the one the contract makes now. It lives in the contract's
 * {@code META-INF/resources}, so every service that depends on the contract serves it at
 * {@code /asyncapi.json}; CI validates it with the AsyncAPI project's own parser ({@code asyncapi validate}).
 *
 * <p>After a change to the topology, the headers or a schema:
 * {@code ./mvnw -pl shared-events/contract test -Dtest=AsyncApiDocumentTest -Dasyncapi.record=true}.
 */
class AsyncApiDocumentTest {

    static final Path DOCUMENT = Path.of(System.getProperty("basedir", "."), "src/main/resources/META-INF/resources/asyncapi.json");

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    private static final Pattern SCHEMA_FILE = Pattern.compile("(\\w+)\\.v(\\d+)\\.json");
    private static final Path SCHEMAS = Path.of(System.getProperty("basedir", "."), "src/main/resources/schemas");
    private static final String AMQP_BINDING_VERSION = "0.3.0";

    @Test
    void theCheckedInDocumentIsTheOneTheContractMakes() throws IOException {
        String made = JSON.writeValueAsString(document()) + "\n";
        if (Boolean.getBoolean("asyncapi.record")) {
            Files.writeString(DOCUMENT, made);
        }
        assertThat(Files.exists(DOCUMENT) ? Files.readString(DOCUMENT) : "").as("""
                %s is not what the contract makes now (Topology, MessageHeaders, the schemas); write it again with \
                ./mvnw -pl shared-events/contract test -Dtest=AsyncApiDocumentTest -Dasyncapi.record=true""", DOCUMENT)
                .isEqualTo(made);
    }

    @Test
    void everyVersionOfEveryEventIsAMessageOnItsExchange() throws IOException {
        JsonNode document = document();
        for (String type : Topology.INVENTORY_BINDINGS) {
            assertThat(document.at("/channels/" + Topology.ORDERS_EXCHANGE + "/messages").has(type + ".v1")).as(type).isTrue();
        }
        for (String type : Topology.ORDER_REPLIES_BINDINGS) {
            assertThat(document.at("/channels/" + Topology.INVENTORY_EXCHANGE + "/messages").has(type + ".v1")).as(type).isTrue();
        }
        assertThat(document.at("/components/messages/OrderCreated.v1/headers/properties").has(MessageHeaders.SCHEMA_VERSION)).isTrue();
        assertThat(document.at("/components/messages/OrderCreated.v1/payload/required").toString()).contains("lines");
        assertThat(document.at("/channels/" + Topology.inventoryPartitions().get(0) + "/bindings/amqp/queue/name").asText())
                .isEqualTo(Topology.inventoryPartitions().get(0));
    }

    /** The whole document, from the contract's classes and schema files. */
    static ObjectNode document() throws IOException {
        Map<String, List<Integer>> versions = versions();
        ObjectNode doc = JSON.createObjectNode();
        doc.put("asyncapi", "3.1.0");
        ObjectNode info = doc.putObject("info");
        info.put("title", "outbox-inbox reference system: events");
        info.put("version", "1.0.0");
        info.put("description", "What the services publish and consume over RabbitMQ. Events are written to a PostgreSQL outbox in the"
                + " producer's business transaction and published by outbox-relay (persistent, mandatory, publisher-confirmed);"
                + " each consumer applies an event once, deduplicating by the AMQP message_id (= the payload's eventId) in its inbox."
                + " Delivery is at least once: expect copies. Generated from shared-events/contract (Topology, MessageHeaders, the"
                + " JSON Schemas) by AsyncApiDocumentTest; do not edit by hand.");
        info.putObject("license").put("name", "Apache-2.0").put("url", "https://www.apache.org/licenses/LICENSE-2.0");
        doc.put("defaultContentType", MessageHeaders.CONTENT_TYPE);
        ObjectNode server = doc.putObject("servers").putObject("local");
        server.put("host", "localhost:5672");
        server.put("protocol", "amqp");
        server.put("protocolVersion", "0-9-1");
        server.put("description", "RabbitMQ of docker compose and deploy/local (RABBITMQ_HOST, RABBITMQ_PORT); one user per service");

        ObjectNode channels = doc.putObject("channels");
        ObjectNode operations = doc.putObject("operations");
        ObjectNode messages = doc.putObject("components").putObject("messages");

        exchange(channels, Topology.ORDERS_EXCHANGE, "topic", "Every order event, routing key = event type; published by"
                + " outbox-relay from order-service's outbox.", Topology.INVENTORY_BINDINGS, versions);
        exchange(channels, Topology.INVENTORY_EXCHANGE, "topic", "inventory-service's replies about an order, routing key = event type;"
                + " published by outbox-relay-inventory from inventory-service's outbox.", Topology.ORDER_REPLIES_BINDINGS, versions);
        operation(operations, "sendOrderEvents", "send", Topology.ORDERS_EXCHANGE, channels,
                "order-service (through its outbox and outbox-relay)");
        operation(operations, "sendInventoryReplies", "send", Topology.INVENTORY_EXCHANGE, channels,
                "inventory-service (through its outbox and outbox-relay-inventory)");

        for (String partition : Topology.inventoryPartitions()) {
            queue(channels, partition, "One of inventory-service's " + Topology.INVENTORY_PARTITIONS + " partitions: a quorum queue with a"
                    + " single active consumer, bound with weight 1 to the consistent-hash exchange " + Topology.INVENTORY_QUEUE
                    + " (itself bound to " + Topology.ORDERS_EXCHANGE + " with " + String.join(", ", Topology.INVENTORY_BINDINGS)
                    + "), which hashes the " + Topology.INVENTORY_PARTITION_KEY + " header: one order's events stay in one"
                    + " partition, in order.", Topology.inventoryPartitionArguments(), Topology.INVENTORY_BINDINGS, versions);
            String id = "receiveOrderEvents" + partition.substring(partition.lastIndexOf('.') + 1);
            operation(operations, id, "receive", partition, channels, "inventory-service");
        }
        queue(channels, Topology.ORDER_REPLIES_QUEUE, "order-service's queue of inventory's replies (quorum), bound to "
                + Topology.INVENTORY_EXCHANGE + " with " + String.join(", ", Topology.ORDER_REPLIES_BINDINGS) + ".",
                Topology.orderRepliesQueueArguments(), Topology.ORDER_REPLIES_BINDINGS, versions);
        operation(operations, "receiveInventoryReplies", "receive", Topology.ORDER_REPLIES_QUEUE, channels, "order-service");

        // Where what cannot be processed waits for a person, with the reason in a header; events keep their shape there.
        deadLetters(channels, Topology.INVENTORY_DEAD_LETTER_QUEUE, "inventory-service's dead letters: messages it can never apply"
                + " (unreadable, invalid, refused by the business), from the fanout exchange " + Topology.INVENTORY_DEAD_LETTER_EXCHANGE
                + "; sent back through " + Topology.INVENTORY_RETRY_EXCHANGE + " (POST /dead-letters/redeliver).",
                Topology.INVENTORY_BINDINGS, versions);
        operation(operations, "receiveInventoryDeadLetters", "receive", Topology.INVENTORY_DEAD_LETTER_QUEUE, channels,
                "an operator, through inventory-service's GET /dead-letters (each look writes fresh copies back, never requeues)");
        deadLetters(channels, Topology.ORDER_DEAD_LETTER_QUEUE, "order-service's dead letters: replies it can never apply, from the"
                + " fanout exchange " + Topology.ORDER_DEAD_LETTER_EXCHANGE + "; sent back through " + Topology.ORDER_RETRY_EXCHANGE + ".",
                Topology.ORDER_REPLIES_BINDINGS, versions);
        operation(operations, "receiveOrderDeadLetters", "receive", Topology.ORDER_DEAD_LETTER_QUEUE, channels,
                "an operator, through order-service's GET /dead-letters");
        deadLetters(channels, Topology.RELAY_PARKING_QUEUE, "The relays' parking place (fanout exchange and queue of this name):"
                + " events the broker returned as unroutable or whose exchange it refuses, and the later events of their"
                + " aggregates held behind them, with " + MessageHeaders.DEAD_LETTER_REASON + ", " + MessageHeaders.ORIGINAL_EXCHANGE
                + " and " + MessageHeaders.ORIGINAL_ROUTING_KEY + "; sent on in order by POST /parked/republish.",
                concat(Topology.INVENTORY_BINDINGS, Topology.ORDER_REPLIES_BINDINGS), versions);
        operation(operations, "receiveParkedEvents", "receive", Topology.RELAY_PARKING_QUEUE, channels,
                "outbox-relay, when an operator calls POST /parked/republish");

        for (String type : versions.keySet()) {
            for (int version : versions.get(type)) {
                messages.set(type + ".v" + version, message(type, version));
            }
        }
        return doc;
    }

    private static void exchange(ObjectNode channels, String name, String type, String description, List<String> types,
                                 Map<String, List<Integer>> versions) {
        ObjectNode channel = channels.putObject(name);
        channel.put("address", name);
        channel.put("description", description);
        references(channel.putObject("messages"), types, versions);
        ObjectNode amqp = channel.putObject("bindings").putObject("amqp");
        amqp.put("is", "routingKey");
        amqp.putObject("exchange").put("name", name).put("type", type).put("durable", true).put("autoDelete", false).put("vhost", "/");
        amqp.put("bindingVersion", AMQP_BINDING_VERSION);
    }

    private static void queue(ObjectNode channels, String name, String description, Map<String, Object> arguments, List<String> types,
                              Map<String, List<Integer>> versions) {
        ObjectNode channel = channels.putObject(name);
        channel.put("address", name);
        channel.put("description", description + " Queue arguments: " + new TreeMap<>(arguments) + ". What it cannot process goes,"
                + " with the reason in the " + MessageHeaders.DEAD_LETTER_REASON + " header, to the dead-letter exchange "
                + arguments.get("x-dead-letter-exchange") + ".");
        references(channel.putObject("messages"), types, versions);
        ObjectNode amqp = channel.putObject("bindings").putObject("amqp");
        amqp.put("is", "queue");
        amqp.putObject("queue").put("name", name).put("durable", true).put("exclusive", false).put("autoDelete", false).put("vhost", "/");
        amqp.put("bindingVersion", AMQP_BINDING_VERSION);
    }

    private static void deadLetters(ObjectNode channels, String name, String description, List<String> types,
                                    Map<String, List<Integer>> versions) {
        queue(channels, name, description, Topology.deadLetterQueueArguments(), types, versions);
        ObjectNode channel = (ObjectNode) channels.get(name);
        channel.put("description", description + " A quorum queue without a delivery limit; each message carries the reason it is"
                + " here in the " + MessageHeaders.DEAD_LETTER_REASON + " header.");
    }

    private static List<String> concat(List<String> first, List<String> second) {
        List<String> all = new java.util.ArrayList<>(first);
        all.addAll(second);
        return all;
    }

    private static void references(ObjectNode messages, List<String> types, Map<String, List<Integer>> versions) {
        for (String type : types) {
            for (int version : versions.getOrDefault(type, List.of())) {
                messages.putObject(type + ".v" + version).put("$ref", "#/components/messages/" + type + ".v" + version);
            }
        }
    }

    private static void operation(ObjectNode operations, String id, String action, String channel, ObjectNode channels, String by) {
        ObjectNode operation = operations.putObject(id);
        operation.put("action", action);
        operation.putObject("channel").put("$ref", "#/channels/" + channel);
        operation.put("description", "By " + by + ".");
        ArrayNode refs = operation.putArray("messages");
        channels.get(channel).get("messages").fieldNames()
                .forEachRemaining(message -> refs.addObject().put("$ref", "#/channels/" + channel + "/messages/" + message));
        ObjectNode amqp = operation.putObject("bindings").putObject("amqp");
        if (action.equals("send")) {
            amqp.put("deliveryMode", 2).put("mandatory", true);
        } else {
            amqp.put("ack", true);
        }
        amqp.put("bindingVersion", AMQP_BINDING_VERSION);
    }

    private static ObjectNode message(String type, int version) throws IOException {
        ObjectNode schema = (ObjectNode) JSON.readTree(SCHEMAS.resolve(type + ".v" + version + ".json").toFile());
        ObjectNode message = JSON.createObjectNode();
        message.put("name", type);
        message.put("title", type + " v" + version);
        message.put("summary", schema.path("description").asText());
        message.put("contentType", MessageHeaders.CONTENT_TYPE);
        message.put("description", "AMQP properties: message_id = the payload's eventId (the consumers' inbox key), type = "
                + type + ", content_type " + MessageHeaders.CONTENT_TYPE + ", delivery_mode 2 (persistent), timestamp = the commit"
                + " time in seconds. JSON Schema: schemas/" + type + ".v" + version + ".json in shared-events/contract.");
        ObjectNode headers = message.putObject("headers");
        headers.put("type", "object");
        headers.putArray("required").add(MessageHeaders.SCHEMA_VERSION).add(MessageHeaders.AGGREGATE_TYPE)
                .add(MessageHeaders.AGGREGATE_ID);
        ObjectNode properties = headers.putObject("properties");
        properties.putObject(MessageHeaders.SCHEMA_VERSION).put("type", "integer").put("const", version)
                .put("description", "The contract version of the payload.");
        properties.putObject(MessageHeaders.AGGREGATE_TYPE).put("type", "string")
                .put("description", "The aggregate type, also the exchange.");
        properties.putObject(MessageHeaders.AGGREGATE_ID).put("type", "string")
                .put("description", "The aggregate's id (the order id): the partition key, so one order's events stay in order.");
        properties.putObject(MessageHeaders.COMMITTED_AT).put("type", "integer")
                .put("description", "When the producer's transaction committed, epoch milliseconds.");
        properties.putObject(MessageHeaders.TRACEPARENT).put("type", "string")
                .put("pattern", "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
                .put("description", "W3C trace context of what caused the event, when there was one.");
        schema.remove("$schema");
        schema.remove("$id");
        message.set("payload", schema);
        ObjectNode amqp = message.putObject("bindings").putObject("amqp");
        amqp.put("messageType", type);
        amqp.put("bindingVersion", AMQP_BINDING_VERSION);
        return message;
    }

    /** Every event type with the versions it has schema files for, in order. */
    private static Map<String, List<Integer>> versions() throws IOException {
        Map<String, List<Integer>> versions = new TreeMap<>();
        try (Stream<Path> files = Files.list(SCHEMAS)) {
            files.map(file -> SCHEMA_FILE.matcher(file.getFileName().toString())).filter(Matcher::matches).forEach(name ->
                    versions.computeIfAbsent(name.group(1), type -> new java.util.ArrayList<>()).add(Integer.parseInt(name.group(2))));
        }
        versions.values().forEach(list -> list.sort(null));
        return versions;
    }
}
