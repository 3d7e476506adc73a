package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * An event version, once published, is read by consumers that will not change with it, and its events
 * stay in outboxes, queues and dead-letter queues: its schema may only grow by optional fields.
 * {@value #PUBLISHED} records what each published version's consumers rely on ({@link SchemaShape}:
 * every field, its type, required or not); this test fails the build on an edit of a schema file that
 * such a consumer could not read (a field removed, retyped, made required or no longer required, a
 * required field added), naming the field. Such a change is a new version: a new file
 * {@code schemas/<Type>.v<N+1>.json}, recorded here when it is published.
 *
 * <p>Recording: {@code ./mvnw -pl shared-events/contract test -Dtest=SchemaCompatibilityTest -Dschemas.record=true}
 * writes the current shapes to {@value #PUBLISHED} after checking them (a breaking edit is never recorded).
 */
class SchemaCompatibilityTest {

    static final String PUBLISHED = "published-schemas.json";

    private static final Pattern SCHEMA_FILE = Pattern.compile("(\\w+)\\.v(\\d+)\\.json");
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final Path MODULE = Path.of(System.getProperty("basedir", "."));
    private static final Path SCHEMAS = MODULE.resolve("src/main/resources/schemas");

    private static final String BREAKING = """
            Changes to published event versions that their consumers cannot read. A version may only grow by optional \
            fields; anything else is a new version (schemas/<Type>.v<N+1>.json beside the old one, consumers first; \
            shared-events/ADD-A-SERVICE.md, "Changing an event")""";

    @Test
    void noPublishedVersionChangesInAWayItsConsumersCannotRead() throws IOException {
        assertThat(breakingChanges()).as(BREAKING).isEmpty();
    }

    @Test
    void everySchemaVersionIsRecordedAsPublishedWithTheShapeItHasNow() throws IOException {
        if (Boolean.getBoolean("schemas.record")) {
            assertThat(breakingChanges()).as(BREAKING + "; nothing was recorded").isEmpty();
            record(current());
        }
        Map<String, SchemaShape> published = published();
        List<String> unrecorded = new ArrayList<>();
        current().forEach((version, shape) -> {
            if (!shape.equals(published.get(version))) {
                unrecorded.add(version + " " + shape.fields());
            }
        });
        assertThat(unrecorded).as("""
                Schema versions whose shape is not the one recorded in %s: once the compatibility test passes, record them \
                with ./mvnw -pl shared-events/contract test -Dtest=SchemaCompatibilityTest -Dschemas.record=true \
                (a later edit is then checked against them)""", PUBLISHED).isEmpty();
    }

    /** Each published version's changes that its consumers could not read, one line each, naming version and field. */
    private static List<String> breakingChanges() throws IOException {
        Map<String, SchemaShape> current = current();
        List<String> breaking = new ArrayList<>();
        published().forEach((version, shape) -> {
            SchemaShape now = current.get(version);
            if (now == null) {
                breaking.add(version + ": the schema file is gone, but events of this version may still be in flight or"
                        + " dead-lettered; keep it while any may be");
            } else {
                now.breakingChanges(shape).forEach(change -> breaking.add(version + ": " + change));
                List<String> added = now.added(shape);
                if (!added.isEmpty()) {
                    System.out.printf("SchemaCompatibilityTest: %s grew by %s (optional, compatible)%n", version, added);
                }
            }
        });
        return breaking;
    }

    @Test
    void theShapeOfASchemaIsEveryFieldWithItsTypeAndWhetherItIsRequired() throws IOException {
        SchemaShape created = current().get("OrderCreated.v1");
        assertThat(created.fields()).containsEntry("eventId", "string/uuid required")
                .containsEntry("lines", "array required")
                .containsEntry("lines[]", "object required")
                .containsEntry("lines[].quantity", "integer required")
                .containsEntry("occurredAt", "string/date-time required");
    }

    @Test
    void aRemovedRetypedOrNewlyRequiredFieldIsBreakingAndAnOptionalOneIsNot() {
        SchemaShape published = new SchemaShape(Map.of("a", "string required", "b", "integer optional", "c", "string optional",
                "d", "string required"));
        SchemaShape edited = new SchemaShape(Map.of("a", "integer required", "b", "integer required", "d", "string optional",
                "e", "string optional", "f", "string required"));
        assertThat(edited.breakingChanges(published)).containsExactlyInAnyOrder(
                "field 'a' was retyped from string to integer",
                "field 'b' was made required: events already written without it would be refused",
                "field 'c' was removed (it was string optional): its consumers read it",
                "field 'd' is no longer required: its consumers count on it",
                "field 'f' was added as required: events already written lack it");
        assertThat(new SchemaShape(Map.of("a", "string required", "e", "string optional"))
                .breakingChanges(new SchemaShape(Map.of("a", "string required")))).as("an optional field added").isEmpty();
    }

    /** Every schema file, by {@code <Type>.v<N>}, with its shape. */
    static Map<String, SchemaShape> current() throws IOException {
        Map<String, SchemaShape> shapes = new TreeMap<>();
        try (Stream<Path> files = Files.list(SCHEMAS)) {
            for (Path file : files.toList()) {
                Matcher name = SCHEMA_FILE.matcher(file.getFileName().toString());
                if (name.matches()) {
                    shapes.put(name.group(1) + ".v" + name.group(2), SchemaShape.of(JSON.readTree(file.toFile())));
                }
            }
        }
        return shapes;
    }

    private static Map<String, SchemaShape> published() throws IOException {
        Path file = MODULE.resolve(PUBLISHED);
        Map<String, SchemaShape> shapes = new TreeMap<>();
        if (Files.exists(file)) {
            JsonNode recorded = JSON.readTree(file.toFile());
            recorded.fields().forEachRemaining(version -> {
                Map<String, String> fields = new TreeMap<>();
                version.getValue().fields().forEachRemaining(field -> fields.put(field.getKey(), field.getValue().asText()));
                shapes.put(version.getKey(), new SchemaShape(fields));
            });
        }
        return shapes;
    }

    private static void record(Map<String, SchemaShape> shapes) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        shapes.forEach((version, shape) -> {
            ObjectNode fields = root.putObject(version);
            shape.fields().forEach(fields::put);
        });
        Files.writeString(MODULE.resolve(PUBLISHED), JSON.writeValueAsString(root) + "\n");
        System.out.printf("SchemaCompatibilityTest: recorded %s in %s%n", shapes.keySet(), PUBLISHED);
    }
}
