package dev.outboxinbox.events;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A versioned event contract: the JSON Schema at {@code schemas/<type>.v<version>.json}.
 * Producers check what they write against it in their tests; consumers check what they receive
 * against it before they act, so an invalid payload is parked with the schema's own words.
 */
public final class EventSchema {

    private static final Map<String, EventSchema> KNOWN = Stream.of(
                    load(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION, OrderCreated.class),
                    load(OrderCancelled.TYPE, OrderCancelled.SCHEMA_VERSION, OrderCancelled.class),
                    load(InventoryReserved.TYPE, InventoryReserved.SCHEMA_VERSION, InventoryReserved.class),
                    load(InventoryRejected.TYPE, InventoryRejected.SCHEMA_VERSION, InventoryRejected.class),
                    load(InventoryReleased.TYPE, InventoryReleased.SCHEMA_VERSION, InventoryReleased.class))
            .collect(Collectors.toUnmodifiableMap(schema -> key(schema.type, schema.version), schema -> schema));

    private final String type;
    private final int version;
    private final Class<? extends Event> eventClass;
    private final Schema schema;

    private EventSchema(String type, int version, Class<? extends Event> eventClass, Schema schema) {
        this.type = type;
        this.version = version;
        this.eventClass = eventClass;
        this.schema = schema;
    }

    /**
     * What a consumer does with a message before it acts: the type is one it takes (an event class
     * under {@code expected}), the version one this build knows, the payload valid against that
     * version's schema, and its event id the message id.
     *
     * @throws InvalidEventException with the reason, if any of that fails: the message can never succeed
     */
    public static <T extends Event> T decode(String messageId, String type, int version, byte[] body, Class<T> expected)
            throws InvalidEventException {
        boolean known = KNOWN.values().stream().anyMatch(s -> s.type.equals(type) && expected.isAssignableFrom(s.eventClass));
        if (!known) {
            // Not swallowed and marked done: an event this consumer does not know is parked for a human.
            throw new InvalidEventException("unknown event type '" + type + "'");
        }
        EventSchema schema = of(type, version).orElseThrow(
                () -> new InvalidEventException("unsupported schema version " + version + " of " + type));
        Event event;
        try {
            Validated validated = schema.validate(body);
            if (!validated.violations().isEmpty()) {
                throw new InvalidEventException("invalid " + type + " v" + version + ": " + String.join("; ", validated.violations()));
            }
            event = validated.as(schema.eventClass);
        } catch (IOException e) {
            throw new InvalidEventException("malformed JSON: " + firstLine(e.getMessage()));
        }
        if (!event.eventId().toString().equals(messageId)) {
            throw new InvalidEventException("message_id " + messageId + " is not the payload's eventId " + event.eventId());
        }
        return expected.cast(event);
    }

    /** A message that breaks the contract, with the reason a person reads in the dead-letter queue. */
    public static final class InvalidEventException extends Exception {
        public InvalidEventException(String reason) {
            super(reason, null, false, false);
        }
    }

    private static String firstLine(String message) {
        return message == null ? "unreadable" : message.lines().findFirst().orElse(message);
    }

    /** The contract for this event type and version, or empty if this build does not know it. */
    public static Optional<EventSchema> of(String type, int version) {
        return Optional.ofNullable(KNOWN.get(key(type, version)));
    }

    /**
     * What is wrong with this payload, one line per violation naming the JSON path; empty when valid.
     *
     * @throws IOException when the bytes are not JSON at all
     */
    public List<String> violations(byte[] json) throws IOException {
        return validate(json).violations();
    }

    /**
     * Parses once and validates: a consumer gets the violations and, when there are none, the
     * event, without reading the bytes twice.
     *
     * @throws IOException when the bytes are not JSON at all
     */
    public Validated validate(byte[] json) throws IOException {
        JsonNode node = EventJson.mapper().readTree(json);
        if (node == null || node.isMissingNode()) {
            return new Validated(node, List.of("$: empty payload"));
        }
        return new Validated(node, schema.validate(node).stream().map(Error::toString).toList());
    }

    /** A parsed payload and what the schema says of it. */
    public record Validated(JsonNode json, List<String> violations) {

        /** @throws IOException when the JSON does not bind to the type (which a valid payload always does) */
        public <T extends Event> T as(Class<T> type) throws IOException {
            return EventJson.mapper().treeToValue(json, type);
        }
    }

    public String type() {
        return type;
    }

    public int version() {
        return version;
    }

    private static String key(String type, int version) {
        return type + ".v" + version;
    }

    private static EventSchema load(String type, int version, Class<? extends Event> eventClass) {
        String resource = "/schemas/" + key(type, version) + ".json";
        try (InputStream in = EventSchema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("Schema missing from the classpath: " + resource);
            }
            Schema schema = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
                    .getSchema(in);
            return new EventSchema(type, version, eventClass, schema);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
