package dev.outboxinbox.inventory.inbox;

import java.util.List;
import java.util.Map;

/**
 * The business side of a consumer: what new messages do. The inbox calls it inside its transaction,
 * after it claimed the message ids, with only the messages that are new to this consumer, so an
 * implementation never deduplicates by message id itself. This is the batch form (one call per
 * group commit, for throughput); the inbox imports nothing of the business it serves.
 *
 * @param <T> the payload type the transport hands over
 */
public interface BatchEffects<T> {

    /**
     * Applies the effect of each message, in the caller's transaction (throw to roll the batch back).
     *
     * @return per message id, a word for what it did ("RESERVED"), logged and shown; a message left
     *         out changed nothing (the business already had its effect under another message id)
     */
    Map<String, String> apply(List<InboxMessage<T>> fresh);

    /**
     * A made-up message whose effect writes what a real one writes. When a batch fails, the inbox
     * applies it in a transaction it rolls back, to tell an outage (the probe fails too) from a
     * message at fault (the probe passes).
     */
    InboxMessage<T> probe();
}
