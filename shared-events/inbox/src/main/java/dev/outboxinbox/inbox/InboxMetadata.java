package dev.outboxinbox.inbox;

/**
 * The inbox's view of one delivery, attached to every message of an inbox channel: inject it into
 * the {@code @Incoming @Inbox} method next to the payload. The {@link Inbox} interceptor reads the
 * key from it; the method may read the message id (to record which message decided something) and
 * the trace it belongs to, and say that it {@linkplain #changedNothing() changed nothing}. While the
 * method runs, the message's trace is the current context: an event it sends with the outbox
 * library's emitter continues it.
 */
public final class InboxMetadata {

    private final String consumer;
    private final String messageId;
    private final String type;
    private final String traceparent;
    /** The channel's transaction the method joins; null when a test calls the method itself. */
    private final ChannelTransaction transaction;
    private volatile boolean duplicate;
    private volatile boolean newToInbox = true;
    private volatile boolean changedNothing;
    /** Whether a method joined {@link #transaction} for this message (the {@link Inbox} interceptor did). */
    private volatile boolean joined;

    /** A message without a trace (a unit test of an {@code @Inbox} method, say). */
    public InboxMetadata(String consumer, String messageId, String type) {
        this(consumer, messageId, type, null);
    }

    /** @param traceparent W3C trace context the consumer handles the message in, or null */
    public InboxMetadata(String consumer, String messageId, String type, String traceparent) {
        this(consumer, messageId, type, traceparent, null);
    }

    /** A message of a channel batch: its key is claimed already, in {@code transaction}, which the method joins. */
    InboxMetadata(String consumer, String messageId, String type, String traceparent, ChannelTransaction transaction) {
        this.consumer = consumer;
        this.messageId = messageId;
        this.type = type;
        this.traceparent = traceparent;
        this.transaction = transaction;
    }

    /** The name this consumer's messages are kept under (with the message id, the inbox key). */
    public String consumer() {
        return consumer;
    }

    public String messageId() {
        return messageId;
    }

    public String type() {
        return type;
    }

    /**
     * The W3C trace context the consumer handles the message in, or null when the message carried
     * none: its consumer span's (a child of the producer's), or, in a service that records no spans,
     * the producer's as it arrived. What a reply written in the same transaction continues.
     */
    public String traceparent() {
        return traceparent;
    }

    /**
     * The message is new to this consumer, but the business already had its effect under another
     * message id (a second reply for an order already decided): counted and logged as
     * {@linkplain Outcome.Unchanged unchanged}, not as a duplicate. The message id stays in the inbox.
     */
    public void changedNothing() {
        changedNothing = true;
    }

    /** The transaction the message's key was claimed in, which the method joins; null: the interceptor opens one. */
    ChannelTransaction transaction() {
        return transaction;
    }

    void joined() {
        joined = true;
    }

    /** Whether the {@link Inbox} interceptor joined the method to the transaction for this message. */
    boolean wasJoined() {
        return joined;
    }

    void markDuplicate() {
        duplicate = true;
    }

    /** Whether the inbox insert added the message's key (false for a copy, even with deduplication off). */
    void claimed(boolean added) {
        newToInbox = added;
    }

    /** What became of the message once its transaction committed, as {@link InboxHandler} says it for a batch. */
    Outcome outcome() {
        if (duplicate) {
            return new Outcome.Duplicate();
        }
        if (changedNothing) {
            return newToInbox ? new Outcome.Unchanged() : new Outcome.Duplicate();
        }
        return new Outcome.Applied("applied");
    }
}
