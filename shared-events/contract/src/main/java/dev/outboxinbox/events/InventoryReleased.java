package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * What a cancelled order had reserved is free again: the reply to {@link OrderCancelled}, version 1
 * of {@code schemas/InventoryReleased.v1.json}. {@code lines} is what was released, and empty when
 * nothing was reserved (the order was rejected, or its cancellation arrived first).
 */
public record InventoryReleased(UUID eventId, UUID orderId, List<Line> lines, Instant occurredAt) implements InventoryEvent {

    public static final String TYPE = "InventoryReleased";
    public static final int SCHEMA_VERSION = 1;

    public InventoryReleased {
        lines = List.copyOf(lines);
    }

    public record Line(String sku, int quantity) {
    }

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
