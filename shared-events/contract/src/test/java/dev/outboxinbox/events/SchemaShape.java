package dev.outboxinbox.events;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a consumer of one event version relies on, read from its JSON Schema: every field by its path
 * ({@code lines[].sku}), with its type (and format) and whether it is required, in one line each:
 * {@code "string/uuid required"}. Two shapes of one version are compared field by field
 * ({@link #breakingChanges}); constraints (lengths, patterns, bounds) are not part of it.
 */
record SchemaShape(Map<String, String> fields) {

    private static final String REQUIRED = " required";

    static SchemaShape of(JsonNode schema) {
        Map<String, String> fields = new TreeMap<>();
        collect(schema, "", fields);
        return new SchemaShape(fields);
    }

    private static void collect(JsonNode object, String prefix, Map<String, String> fields) {
        Set<String> required = new HashSet<>();
        object.path("required").forEach(name -> required.add(name.asText()));
        object.path("properties").fields().forEachRemaining(property -> {
            String path = prefix + property.getKey();
            JsonNode field = property.getValue();
            fields.put(path, type(field) + (required.contains(property.getKey()) ? REQUIRED : " optional"));
            JsonNode items = field.path("items");
            if ("object".equals(field.path("type").asText())) {
                collect(field, path + ".", fields);
            } else if (items.isObject()) {
                fields.put(path + "[]", type(items) + REQUIRED);
                if ("object".equals(items.path("type").asText())) {
                    collect(items, path + "[].", fields);
                }
            }
        });
    }

    private static String type(JsonNode field) {
        String type = field.path("type").isArray() ? field.path("type").toString() : field.path("type").asText("any");
        return field.has("format") ? type + "/" + field.path("format").asText() : type;
    }

    /**
     * What a consumer of the published shape could not read in this one, one sentence per field:
     * a field removed, retyped, made required or no longer required, or added as required. An optional
     * field added is not among them: readers ignore what they do not know (EventJson reads tolerantly).
     */
    List<String> breakingChanges(SchemaShape published) {
        List<String> breaking = new ArrayList<>();
        published.fields.forEach((path, was) -> {
            String now = fields.get(path);
            if (now == null) {
                breaking.add("field '" + path + "' was removed (it was " + was + "): its consumers read it");
            } else if (!typeOf(now).equals(typeOf(was))) {
                breaking.add("field '" + path + "' was retyped from " + typeOf(was) + " to " + typeOf(now));
            } else if (!was.endsWith(REQUIRED) && now.endsWith(REQUIRED)) {
                breaking.add("field '" + path + "' was made required: events already written without it would be refused");
            } else if (was.endsWith(REQUIRED) && !now.endsWith(REQUIRED)) {
                breaking.add("field '" + path + "' is no longer required: its consumers count on it");
            }
        });
        fields.forEach((path, now) -> {
            if (!published.fields.containsKey(path) && now.endsWith(REQUIRED)) {
                breaking.add("field '" + path + "' was added as required: events already written lack it");
            }
        });
        return breaking;
    }

    /** The fields this shape has and the published one lacks: an additive change. */
    List<String> added(SchemaShape published) {
        return fields.keySet().stream().filter(path -> !published.fields.containsKey(path)).toList();
    }

    private static String typeOf(String field) {
        return field.replace(REQUIRED, "").replace(" optional", "");
    }
}
