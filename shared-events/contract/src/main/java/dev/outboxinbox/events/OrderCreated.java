package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * An order was placed: version 1 of the contract in {@code schemas/OrderCreated.v1.json}.
 * Adding an optional field keeps version 1; renaming, removing or re-typing one is version 2.
 */
public record OrderCreated(UUID eventId, UUID orderId, String customerId, List<Line> lines, Instant occurredAt)
        implements OrderEvent {

    public static final String TYPE = "OrderCreated";
    public static final int SCHEMA_VERSION = 1;

    /** Bounds shared by the producer's input validation and the schema, so the two cannot disagree. */
    public static final int MAX_LINES = 100;
    public static final int MAX_QUANTITY = 10_000;
    public static final int MAX_ID_LENGTH = 64;
    /**
     * What a customer id or a SKU may hold: no NUL, tab, newline or other ASCII control character
     * (PostgreSQL refuses a NUL in text; the others would travel into logs and every consumer).
     */
    public static final String ID_CHARACTERS = "\\P{Cntrl}*";

    public OrderCreated {
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
