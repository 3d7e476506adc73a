package dev.outboxinbox.inbox;

/**
 * A message that passed every check at the door: its id (the inbox key, with the consumer's name),
 * its type (kept in the inbox row) and the payload the business handler reads.
 */
public record InboxMessage<T>(String messageId, String type, T payload) {

    /** The inbox columns (consumer, message id, type) are varchar(64). */
    public static final int MAX_KEY_LENGTH = 64;
}
