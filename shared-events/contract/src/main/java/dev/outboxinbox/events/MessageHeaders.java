package dev.outboxinbox.events;

/**
 * The names used on the wire, in one place, for the relay that writes them and the consumers
 * that read them.
 *
 * <p>AMQP message properties carry what AMQP has a slot for: {@code message_id} is the event id
 * (the consumer's deduplication key), {@code type} the event type, {@code content_type}
 * {@value #CONTENT_TYPE}, {@code timestamp} the commit time in whole seconds (AMQP's resolution; see
 * {@link #COMMITTED_AT}), delivery mode 2 (persistent). Everything else is an application header named here.
 */
public final class MessageHeaders {

    public static final String CONTENT_TYPE = "application/json";

    /** The aggregate type, e.g. {@code orders}; also the name of the exchange. */
    public static final String AGGREGATE_TYPE = "aggregate-type";
    /** The id of the aggregate the event belongs to, e.g. the order id. */
    public static final String AGGREGATE_ID = "aggregate-id";
    /** The contract version of the payload, an integer. */
    public static final String SCHEMA_VERSION = "schema-version";
    /**
     * When the transaction that wrote the event committed, in epoch milliseconds: the commit time the
     * WAL records (for an event the relay republished from the outbox table, its {@code occurred_at}).
     * Consumers measure commit → applied from it. A long.
     */
    public static final String COMMITTED_AT = "committed-at";
    /** W3C trace context of the request that caused the event, when there was one. */
    public static final String TRACEPARENT = "traceparent";
    /** Why a message was dead-lettered (by a consumer) or parked (by the relay), set by whoever parked it. */
    public static final String DEAD_LETTER_REASON = "x-dead-letter-reason";
    /** Where a parked or dead-lettered message was first published: its exchange and routing key. */
    public static final String ORIGINAL_EXCHANGE = "x-original-exchange";
    public static final String ORIGINAL_ROUTING_KEY = "x-original-routing-key";

    private MessageHeaders() {
    }
}
