package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.UUID;

/**
 * The order cannot be served (an unknown SKU, a SKU twice, not enough stock): nothing is reserved.
 * Version 1 of {@code schemas/InventoryRejected.v1.json}.
 */
public record InventoryRejected(UUID eventId, UUID orderId, String reason, Instant occurredAt) implements InventoryEvent {

    public static final String TYPE = "InventoryRejected";
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
