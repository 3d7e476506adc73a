package dev.outboxinbox.inbox;

import java.util.List;
import java.util.Map;

/**
 * The business side of a consumer, a batch at a time: the opt-in for throughput (one call per
 * group commit, so a batch can cost a handful of statements instead of a handful per message).
 * The inbox calls it inside its transaction, after it claimed the message ids, with only the
 * messages that are new to this consumer, so an implementation never deduplicates by message id.
 * A service has either this or an {@code @Incoming @Inbox} method on a channel of the inbox connector.
 *
 * @param <T> the payload type the {@link MessageDecoder} makes
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
     * message at fault (the probe passes). {@code null}: the probe writes only the inbox row.
     */
    default InboxMessage<T> probe() {
        return null;
    }
}
