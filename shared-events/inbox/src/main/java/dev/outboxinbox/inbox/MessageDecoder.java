package dev.outboxinbox.inbox;

/**
 * The service's half of the door: turns a message that passed the inbox's envelope checks (a body
 * within the size limit, a usable message id, a type, an integer schema version) into the payload
 * its handler reads. Whatever it rejects can never succeed on redelivery: the message is
 * dead-lettered at once with the reason, never retried, never blocking the others.
 *
 * @param <T> the payload type the handler takes
 */
public interface MessageDecoder<T> {

    /**
     * @throws RejectedMessageException if the message is not one this consumer can ever apply: an
     *         unknown type, an unsupported schema version, a payload that breaks its schema
     */
    T decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException;
}
