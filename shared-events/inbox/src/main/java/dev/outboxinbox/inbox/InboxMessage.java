package dev.outboxinbox.inbox;

/**
 * A message that passed every check at the door: its id (the inbox key, with the consumer's name),
 * its type (kept in the inbox row) and the payload the business handler reads.
 */
public record InboxMessage<T>(String messageId, String type, T payload) {
}
