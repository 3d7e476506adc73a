package dev.outboxinbox.inbox;

import java.util.concurrent.CompletableFuture;

/**
 * Where the transport hands a message that passed the door: the group-commit batcher
 * ({@link InboxBatcher}, for {@link BatchEffects}) or a SmallRye channel ({@link ChannelSink}, for an
 * {@code @Incoming @Inbox} method). Either way the transport acks, dead-letters or requeues by the
 * outcome, and only once it is known.
 */
public interface InboxSink {

    /** @return the message's outcome, completed once its transaction committed (or failed for good) */
    CompletableFuture<Outcome> submit(InboxMessage<?> message);

    /** null while messages are being applied; else why they are not (an outage, held until it passes). */
    String problem();

    /**
     * Whether the database refuses this service's writes right now (a batch failed and the probe, a
     * real write on the service's pool, failed too), held until it passes. Partitioned, an instance in
     * an outage longer than the lease leaves the members while another is there to apply its share.
     */
    default boolean outage() {
        return false;
    }
}
