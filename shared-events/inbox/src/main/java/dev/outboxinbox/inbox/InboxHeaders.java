package dev.outboxinbox.inbox;

/**
 * The names the inbox reads and writes on the wire. AMQP properties carry the message id (the
 * deduplication key) and the type; these are the application headers. A producer that feeds this
 * inbox writes {@link #SCHEMA_VERSION}; the inbox writes the other three on what it dead-letters.
 */
public final class InboxHeaders {

    /** The contract version of the payload, an integer. */
    public static final String SCHEMA_VERSION = "schema-version";
    /**
     * When the producer's transaction committed, epoch milliseconds (outbox-relay writes it). Optional:
     * where it is present the inbox measures commit → applied ({@code inbox_commit_to_applied_seconds}).
     */
    public static final String COMMITTED_AT = "committed-at";
    /** W3C trace context of the span that published the message; the inbox continues the trace. Optional. */
    public static final String TRACEPARENT = "traceparent";
    /** Why the message was dead-lettered. */
    public static final String DEAD_LETTER_REASON = "x-dead-letter-reason";
    /** Where the dead-lettered message was first published: its exchange and routing key. */
    public static final String ORIGINAL_EXCHANGE = "x-original-exchange";
    public static final String ORIGINAL_ROUTING_KEY = "x-original-routing-key";

    private InboxHeaders() {
    }
}
