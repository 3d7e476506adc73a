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

/**
 * A versioned event contract: the JSON Schema at {@code schemas/<type>.v<version>.json}.
 * Producers check what they write against it in their tests; consumers check what they receive
 * against it before they act, so an invalid payload is parked with the schema's own words.
 */
public final class EventSchema {

    private static final Map<String, EventSchema> KNOWN = Map.of(
            key(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION),
            load(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION));

    private final String type;
    private final int version;
    private final Schema schema;

    private EventSchema(String type, int version, Schema schema) {
        this.type = type;
        this.version = version;
        this.schema = schema;
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
        public <T extends OrderEvent> T as(Class<T> type) throws IOException {
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

    private static EventSchema load(String type, int version) {
        String resource = "/schemas/" + key(type, version) + ".json";
        try (InputStream in = EventSchema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("Schema missing from the classpath: " + resource);
            }
            Schema schema = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
                    .getSchema(in);
            return new EventSchema(type, version, schema);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
