package dev.outboxinbox.inbox;

/**
 * The inbox's view of one delivery, attached to every message of an inbox channel: inject it into
 * the {@code @Incoming @Inbox} method next to the payload. The {@link Inbox} interceptor reads the
 * key from it; the method may read the message id (to record which message decided something) and
 * say that it {@linkplain #changedNothing() changed nothing}.
 */
public final class InboxMetadata {

    private final String consumer;
    private final String messageId;
    private final String type;
    private volatile boolean duplicate;
    private volatile boolean changedNothing;

    public InboxMetadata(String consumer, String messageId, String type) {
        this.consumer = consumer;
        this.messageId = messageId;
        this.type = type;
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
     * The business already had this effect under another message id (a second reply for an order
     * already decided): counted and logged as a duplicate. The message id stays in the inbox.
     */
    public void changedNothing() {
        changedNothing = true;
    }

    void markDuplicate() {
        duplicate = true;
    }

    /** Whether the message took no effect: seen before by this consumer, or by the business's own say. */
    boolean tookNoEffect() {
        return duplicate || changedNothing;
    }
}
