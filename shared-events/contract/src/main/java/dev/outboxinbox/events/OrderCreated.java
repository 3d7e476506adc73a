package dev.outboxinbox.events;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * An order was placed: version 2 of the contract, {@code schemas/OrderCreated.v2.json}, what
 * order-service writes. Version 1 ({@link V1}, {@code schemas/OrderCreated.v1.json}) had no currency
 * and no prices; its events stay in outboxes, queues and dead-letter queues, so a consumer reads both:
 * {@link EventSchema#decode} validates each against its own version's schema, then upcasts a v1 event
 * to this record ({@link V1#upcast()}). A handler sees only this shape.
 *
 * <p>Adding an optional field keeps version 2; renaming, removing or re-typing one, or adding a
 * required one, is version 3 (shared-events/ADD-A-SERVICE.md, "Changing an event").
 *
 * @param currency the ISO 4217 code of the order's prices; {@value #DEFAULT_CURRENCY} for every order placed
 *                 before version 2, which had no prices
 */
public record OrderCreated(UUID eventId, UUID orderId, String customerId, String currency, List<Line> lines, Instant occurredAt)
        implements OrderEvent {

    public static final String TYPE = "OrderCreated";
    /** The version order-service writes unless told otherwise (deploy/OPERATIONS.md, "Changing an event, deploy by deploy"). */
    public static final int SCHEMA_VERSION = 2;

    /** Bounds shared by the producer's input validation and the schema, so the two cannot disagree. */
    public static final int MAX_LINES = 100;
    public static final int MAX_QUANTITY = 10_000;
    public static final int MAX_ID_LENGTH = 64;
    /**
     * What a customer id or a SKU may hold: no NUL, tab, newline or other ASCII control character
     * (PostgreSQL refuses a NUL in text; the others would travel into logs and every consumer).
     */
    public static final String ID_CHARACTERS = "\\P{Cntrl}*";
    /** An ISO 4217 code: three capital letters. */
    public static final String CURRENCY_CODE = "[A-Z]{3}";
    /** The currency of an order that names none, and of every version 1 event. */
    public static final String DEFAULT_CURRENCY = "EUR";
    /** A unit price has at most this many digits before the decimal point … */
    public static final int PRICE_INTEGER_DIGITS = 10;
    /** … and at most this many after it. */
    public static final int PRICE_FRACTION_DIGITS = 2;

    public OrderCreated {
        lines = List.copyOf(lines);
    }

    /** An order in {@value #DEFAULT_CURRENCY}. */
    public OrderCreated(UUID eventId, UUID orderId, String customerId, List<Line> lines, Instant occurredAt) {
        this(eventId, orderId, customerId, DEFAULT_CURRENCY, lines, occurredAt);
    }

    /**
     * @param unitPrice what one unit costs, in the order's currency, as a decimal string in JSON ("12.50"); absent
     *                  when the client gave none (and in every version 1 event)
     */
    public record Line(String sku, int quantity,
                       @JsonInclude(JsonInclude.Include.NON_NULL) @JsonFormat(shape = JsonFormat.Shape.STRING) BigDecimal unitPrice) {

        /** A line without a price. */
        public Line(String sku, int quantity) {
            this(sku, quantity, null);
        }
    }

    /**
     * This order as version 1, for a producer pinned to it while consumers that read only version 1
     * still run (deploy/OPERATIONS.md, "Changing an event, deploy by deploy").
     *
     * @throws IllegalStateException if the order says what version 1 cannot: a currency other than
     *                               {@value #DEFAULT_CURRENCY}, or a price (order-service refuses such a request first)
     */
    public V1 asV1() {
        if (!fitsV1()) {
            throw new IllegalStateException("OrderCreated v1 carries no currency and no price: " + this);
        }
        return new V1(eventId, orderId, customerId, lines.stream().map(line -> new V1.Line(line.sku, line.quantity)).toList(),
                occurredAt);
    }

    /** Whether version 1 can say all this order says: no price, and the default currency. */
    public boolean fitsV1() {
        return currency.equals(DEFAULT_CURRENCY) && lines.stream().allMatch(line -> line.unitPrice == null);
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

    /**
     * Version 1, {@code schemas/OrderCreated.v1.json}: an order without currency or prices. Consumers read it
     * through {@link #upcast()}; a producer writes it only when pinned to version 1.
     */
    public record V1(UUID eventId, UUID orderId, String customerId, List<Line> lines, Instant occurredAt)
            implements Event, OlderVersion<OrderCreated> {

        public static final int SCHEMA_VERSION = 1;

        public V1 {
            lines = List.copyOf(lines);
        }

        public record Line(String sku, int quantity) {
        }

        /** Version 1 had no prices and every order was in {@value OrderCreated#DEFAULT_CURRENCY}. */
        @Override
        public OrderCreated upcast() {
            return new OrderCreated(eventId, orderId, customerId, DEFAULT_CURRENCY,
                    lines.stream().map(line -> new OrderCreated.Line(line.sku, line.quantity)).toList(), occurredAt);
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

        @Override
        @JsonIgnore
        public String aggregateType() {
            return OrderEvent.AGGREGATE_TYPE;
        }

        @Override
        @JsonIgnore
        public String aggregateId() {
            return orderId.toString();
        }
    }
}
