package dev.outboxinbox.inbox;

import java.util.List;

/**
 * Optional, on the bean of an {@code @Incoming @Inbox} method: a look at a batch's new messages before
 * the method is called for each of them. The inbox channel calls it once per transaction, on the
 * channel's thread and inside that transaction, after the claim and before the first call, with the
 * payloads of the messages the method will be called for (copies left out), in the order of the calls.
 *
 * <p>What it is for: a per-message method whose every call starts with a read (the row its message
 * moves) makes a round trip a message, one after the other. Here the bean reads those rows for the
 * whole batch in one statement, locking them as the calls would, into the transaction's persistence
 * context; each call then finds its row there ({@code EntityManager.find} with the same lock mode makes no
 * query), changes it, and Hibernate writes the changes at the commit, in JDBC batches. A batch then costs
 * a handful of round trips, not one a message.
 *
 * <p>It must not change anything: a message's effect belongs to its own call, which may be skipped (a
 * copy), made again (its batch rolled back) or judged alone. The calls must still be right without it
 * (a test calls the method directly), only slower. Throwing fails the batch without a message to
 * blame: its messages are applied again one a transaction, each with a look of its own, so a payload the
 * look cannot take is judged alone, as if its method had thrown.
 *
 * @param <T> the payload type of the channel (what its {@link MessageDecoder} makes)
 */
public interface InboxLookahead<T> {

    /** Reads (and locks) what the method's calls for {@code payloads} will need; changes nothing. */
    void lookahead(List<T> payloads);
}
