package {{package}}.events;

import dev.outboxinbox.events.Event;
import java.time.Instant;
import java.util.UUID;

/**
 * Version 1 of {{type}} (src/main/resources/schemas/{{type}}.v1.json), which {{name}} sends through its
 * outbox to the exchange {{exchange}}: about {@code subjectId}, caused by the event {@code causeId}. Made by
 * deploy/new-service with placeholder fields: give it its own. Another service can consume it once it
 * is in the contract (shared-events/contract: this record, its schema, EventSchema; ADD-A-SERVICE.md).
 * Type, version, exchange and aggregate id travel as message properties, not in the payload: {@link Event}
 * keeps these methods out of the JSON.
 */
public record {{type}}(UUID eventId, String subjectId, UUID causeId, Instant occurredAt) implements Event {

    public static final String TYPE = "{{type}}";
    public static final int SCHEMA_VERSION = 1;
    public static final String AGGREGATE_TYPE = "{{exchange}}";

    @Override
    public String eventType() {
        return TYPE;
    }

    @Override
    public int schemaVersion() {
        return SCHEMA_VERSION;
    }

    @Override
    public String aggregateType() {
        return AGGREGATE_TYPE;
    }

    @Override
    public String aggregateId() {
        return subjectId;
    }
}
