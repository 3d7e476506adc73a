package dev.outboxinbox.inbox;

/**
 * The business side of a consumer, one message at a time: the default contract. The inbox calls it
 * inside its transaction, after it claimed the message id, and only for a message that is new to
 * this consumer; so it never deduplicates by message id itself. Throw to roll the transaction back
 * (the inbox then tells an outage from a message at fault, and parks only the latter).
 *
 * <p>Messages that arrive together still commit together (group commit): one transaction, one
 * handler call per message. For more throughput, implement {@link BatchEffects} instead.
 *
 * @param <T> the payload type the {@link MessageDecoder} makes
 */
public interface MessageHandler<T> {

    /**
     * Applies the message's effect in the caller's transaction.
     *
     * @return a word for what it did ("CONFIRMED"), logged and counted as applied; {@code null} if it
     *         changed nothing (the business already had this effect under another message id)
     */
    String handle(InboxMessage<T> message);
}
