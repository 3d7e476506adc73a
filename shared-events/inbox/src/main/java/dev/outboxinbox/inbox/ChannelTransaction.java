package dev.outboxinbox.inbox;

import java.util.List;

/**
 * One transaction of an inbox channel, opened by {@link ChannelSink} on its own thread for several
 * messages at once: its fences set and the batch's message ids claimed with one INSERT, then joined by
 * the {@code @Incoming @Inbox} method for each new message in turn (SmallRye calls it on the sink's
 * thread; {@link #join()} and {@link #leave()} also work from another), and committed (or rolled back)
 * by the sink. The method's writes, the inbox rows and the replies it sends
 * through the outbox commit together, and the messages are acked only after that commit. (What it sees
 * that it would not in a transaction of its own is in {@link ChannelSink}'s description.)
 */
interface ChannelTransaction {

    /**
     * Whether this transaction's claim added {@code messageId}'s key: true once per id (the same message
     * twice in one batch is new the first time, a copy the second), false for a copy of a message
     * applied before.
     */
    boolean claimed(String messageId);

    /**
     * Makes the transaction the current thread's (the method's, for its call); {@link #leave()} after.
     *
     * @return false, joining nothing, once the batch is {@linkplain #abandon() abandoned}: the method is not called
     */
    boolean join();

    /**
     * A method of the batch threw: the batch will be rolled back, and the methods of the messages behind
     * it, already handed to SmallRye, are not called ({@link #join()} says so); each is offered again.
     */
    void abandon();

    /** Detaches it from the current thread again, so that the sink's thread can end it. */
    void leave();

    /** On the sink's thread: commits everything the batch's methods wrote; throws if it did not commit. */
    void commit();

    /** On the sink's thread: rolls everything back (never throws: a connection already gone rolled back too). */
    void rollback();

    /** Opens channel transactions: the inbox's side of a {@link ChannelSink}. */
    interface Opener {

        /** Begins a transaction, sets its fences, claims the batch's ids under {@code consumer}; leaves it detached. */
        ChannelTransaction begin(String consumer, List<InboxMessage<?>> batch);

        /**
         * Throws if a channel transaction cannot be had right now: one begun as {@link #begin} begins it
         * (the fences, the session, a made-up message's claim under {@code consumer}), then rolled back.
         * Changes nothing either way.
         */
        void probe(String consumer);
    }
}
