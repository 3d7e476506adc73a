package dev.outboxinbox.events;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A versioned event contract: the JSON Schema at {@code schemas/<type>.v<version>.json}.
 * Producers check what they write against it in their tests; consumers check what they receive
 * against it before they act, so an invalid payload is parked with the schema's own words.
 */
public final class EventSchema {

    private static final Map<String, EventSchema> KNOWN = Stream.of(
                    load(OrderCreated.TYPE, OrderCreated.V1.SCHEMA_VERSION, OrderCreated.V1.class),
                    load(OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION, OrderCreated.class),
                    load(OrderCancelled.TYPE, OrderCancelled.SCHEMA_VERSION, OrderCancelled.class),
                    load(InventoryReserved.TYPE, InventoryReserved.SCHEMA_VERSION, InventoryReserved.class),
                    load(InventoryRejected.TYPE, InventoryRejected.SCHEMA_VERSION, InventoryRejected.class),
                    load(InventoryReleased.TYPE, InventoryReleased.SCHEMA_VERSION, InventoryReleased.class))
            .collect(Collectors.toUnmodifiableMap(schema -> key(schema.type, schema.version), schema -> schema));

    /** Each event type's versions, oldest first: made once, read for every message a consumer decodes. */
    private static final Map<String, SortedSet<Integer>> VERSIONS = KNOWN.values().stream()
            .collect(Collectors.groupingBy(schema -> schema.type, Collectors.collectingAndThen(
                    Collectors.mapping(schema -> schema.version, Collectors.toCollection(TreeSet::new)),
                    Collections::unmodifiableSortedSet)));

    private final String type;
    private final int version;
    /** The record this version binds to. */
    private final Class<? extends Event> eventClass;
    /** The record a handler gets: {@link #eventClass}, or the newest version it upcasts to ({@link OlderVersion}). */
    private final Class<? extends Event> readAs;
    private final Schema schema;

    private EventSchema(String type, int version, Class<? extends Event> eventClass, Schema schema) {
        this.type = type;
        this.version = version;
        this.eventClass = eventClass;
        this.readAs = newest(eventClass);
        this.schema = schema;
    }

    /**
     * What a consumer does with a message before it acts: the type is one it takes (an event class
     * under {@code expected}), the version one this build knows, the payload valid against that
     * version's schema, and its event id the message id. An older version comes out upcast to the
     * newest record ({@link OlderVersion}): a handler sees one shape, whatever version was sent.
     *
     * @throws InvalidEventException with the reason, if any of that fails: the message can never succeed
     */
    public static <T extends Event> T decode(String messageId, String type, int version, byte[] body, Class<T> expected)
            throws InvalidEventException {
        return decode(messageId, type, version, body, expected, versions(type));
    }

    /**
     * {@link #decode(String, String, int, byte[], Class)} by a consumer that reads only some of the versions
     * this build knows (as before its upgrade, in a rolling deploy's rehearsal).
     *
     * @param reads the versions this consumer reads
     * @throws NewerVersionException  for the version after the newest it reads: a producer upgraded first; an
     *                                upgraded consumer reads it (the inbox holds it for one: NotReadableYetException)
     * @throws InvalidEventException for anything else that fails: the message can never succeed
     */
    public static <T extends Event> T decode(String messageId, String type, int version, byte[] body, Class<T> expected,
                                             Set<Integer> reads) throws InvalidEventException {
        boolean known = KNOWN.values().stream().anyMatch(s -> s.type.equals(type) && expected.isAssignableFrom(s.readAs));
        if (!known) {
            // Not swallowed and marked done: an event this consumer does not know is parked for a human.
            throw new InvalidEventException("unknown event type '" + type + "'");
        }
        Optional<EventSchema> contract = of(type, version);
        if (contract.isEmpty() || !reads.contains(version)) {
            SortedSet<Integer> readable = new TreeSet<>(versions(type));
            readable.retainAll(reads);
            String versionsRead = readable.stream().map(v -> "v" + v).collect(Collectors.joining(", "));
            // The next version only: a rolling deploy moves one version at a time. A version further ahead is no
            // producer's upgrade (a header gone wrong, say) and must not pause a queue: it is dead-lettered at once.
            if (!readable.isEmpty() && version == readable.last() + 1) {
                throw new NewerVersionException("schema version " + version + " of " + type + " is newer than this consumer"
                        + " reads (" + versionsRead + "): upgrade the consumer");
            }
            throw new InvalidEventException("unsupported schema version " + version + " of " + type + ": this consumer reads "
                    + (readable.isEmpty() ? "no version of it" : versionsRead));
        }
        EventSchema schema = contract.get();
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
        while (event instanceof OlderVersion<?> older) {
            event = older.upcast();
        }
        if (!event.eventId().toString().equals(messageId)) {
            throw new InvalidEventException("message_id " + messageId + " is not the payload's eventId " + event.eventId());
        }
        return expected.cast(event);
    }

    /** The versions of an event type this build knows (its schema files), oldest first; empty for an unknown type. */
    public static SortedSet<Integer> versions(String type) {
        return VERSIONS.getOrDefault(type, Collections.emptySortedSet());
    }

    /** The event types this build knows, by name. */
    public static SortedSet<String> types() {
        return new TreeSet<>(VERSIONS.keySet());
    }

    /** A message that breaks the contract, with the reason a person reads in the dead-letter queue. */
    public static class InvalidEventException extends Exception {
        public InvalidEventException(String reason) {
            super(reason, null, false, false);
        }
    }

    /**
     * The version after the newest this consumer reads: not broken, only ahead of this consumer (its producer
     * was deployed first). A consumer holds it for an upgraded instance rather than dead-letter it: parked, it would
     * let its aggregate's later events overtake it.
     */
    public static final class NewerVersionException extends InvalidEventException {
        public NewerVersionException(String reason) {
            super(reason);
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

    /** Where {@link OlderVersion} steps lead from a record: the record itself when it is the newest. */
    @SuppressWarnings("unchecked")
    private static Class<? extends Event> newest(Class<? extends Event> record) {
        for (Type implemented : record.getGenericInterfaces()) {
            if (implemented instanceof ParameterizedType step && step.getRawType() == OlderVersion.class) {
                return newest((Class<? extends Event>) step.getActualTypeArguments()[0]);
            }
        }
        return record;
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
