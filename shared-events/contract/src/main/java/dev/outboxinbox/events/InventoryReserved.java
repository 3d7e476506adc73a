package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.UUID;

/** Every line of the order is reserved: version 1 of {@code schemas/InventoryReserved.v1.json}. */
public record InventoryReserved(UUID eventId, UUID orderId, Instant occurredAt) implements InventoryEvent {

    public static final String TYPE = "InventoryReserved";
    public static final int SCHEMA_VERSION = 1;

    @Override
    @JsonIgnore
    public String eventType() {
        return TYPE;
    }

    @Override
    @JsonIgnore
    public int schemaVersion() {
        return SCHEMA_VERSION;
    }
}
