package dev.outboxinbox.inbox;

/**
 * A message that passed every check at the door: its id (the inbox key, with the consumer's name),
 * its type (kept in the inbox row), the payload the business handler reads, and the W3C
 * {@code traceparent} of this consumer's span for it (or null): an effect that writes an event to an
 * outbox passes it on, so the trace continues (see {@link InboxTracing}).
 */
public record InboxMessage<T>(String messageId, String type, T payload, String traceparent) {

    /** The inbox columns (consumer, message id, type) are varchar(64). */
    public static final int MAX_KEY_LENGTH = 64;

    /** A message outside any trace. */
    public InboxMessage(String messageId, String type, T payload) {
        this(messageId, type, payload, null);
    }

    public InboxMessage<T> withTraceparent(String value) {
        return new InboxMessage<>(messageId, type, payload, value);
    }
}
