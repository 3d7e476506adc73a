package dev.outboxinbox.inbox;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Everything the inbox is told by its service, under {@code inbox.*} (environment {@code INBOX_*}):
 * what is per service (its transactions' pace and fences, retention, migration, readiness, the unsafe
 * switches) and the defaults of its channels. What is per stream (the queue, its exchange and
 * routing keys, dead letters, partitions) is each inbox channel's, under
 * {@code mp.messaging.incoming.<channel>.*} ({@link ChannelSettings#ofChannel}); only a service that
 * applies its messages with {@link BatchEffects}, and so has no channel, sets them here
 * ({@link ChannelSettings#ofService}). The defaults are the ones measured and chaos-tested with
 * inventory-service.
 */
@ConfigMapping(prefix = "inbox")
public interface InboxConfig {

    /**
     * The name this service's messages are kept under: the inbox key is {@code (consumer, message_id)},
     * so two consumers sharing a database each take a message into account once. 1–64 characters.
     * A channel's own name ({@code mp.messaging.incoming.<channel>.consumer}) defaults to
     * {@code <this>.<channel>}; a {@link BatchEffects} service uses this one.
     * Never rename a running consumer: every message would look new to it.
     */
    @WithDefault("${quarkus.application.name}")
    String consumer();

    /**
     * The queue this consumer reads; declared (quorum) with its dead-lettering on every connection.
     * Partitioned ({@link Partitioning#count()} &gt; 0), the name of the consistent-hash exchange in
     * front of the partitions and their prefix: {@code <queue>.0} … {@code <queue>.<count - 1>}.
     * A {@link BatchEffects} service's only; a channel's is its {@code queue} attribute.
     */
    Optional<String> queue();

    /** The exchange the queue is bound to (declared too, in case the consumer starts before the producer). */
    Optional<String> exchange();

    /** The exchange's type: {@code topic}, {@code direct}, {@code fanout} or {@code headers}. */
    @WithDefault("topic")
    String exchangeType();

    /** What the queue is bound with: the event types this consumer takes. */
    Optional<List<String>> routingKeys();

    /** Where a message that cannot be processed is parked with its reason. Default: {@code <queue>.dead-letter}. */
    Optional<String> deadLetterQueue();

    /** The fanout exchange in front of the dead-letter queue. Default: {@code <queue>.dead-letter}. */
    Optional<String> deadLetterExchange();

    /**
     * The fanout exchange bound to this queue alone, through which a dead letter is sent back once
     * its cause is fixed (so it reaches this consumer and no other subscriber). Default: {@code <queue>.retry}.
     */
    Optional<String> retryExchange();

    /**
     * Deliveries of one message before the broker dead-letters it on its own. The inbox parks a bad
     * message itself, with a reason, on its first delivery; this limit only catches a message that
     * kills the consumer every time it is delivered.
     */
    @WithDefault("10")
    int deliveryLimit();

    /**
     * The most unacked messages the broker hands this consumer at once. Each is acked only after
     * its batch commits, so prefetch bounds the batch size (a channel's default: each has its own): with 512, deploy/benchmarks/inventory
     * measured 5,800–6,200 distinct messages/s here.
     */
    @WithDefault("512")
    int prefetch();

    /** The most messages committed in one transaction. */
    @WithDefault("100")
    int maxBatchSize();

    /** A body larger than this is dead-lettered unread. */
    @WithDefault("65536")
    int maxMessageBytes();

    /**
     * First pause after a failed batch; doubles up to {@link #maxBackoff()}. During an outage the
     * batch is retried at that pace for as long as the outage lasts: nothing is requeued or parked.
     */
    @WithDefault("PT0.1S")
    Duration initialBackoff();

    /** The longest pause between attempts during an outage: also the most time lost after it ends. */
    @WithDefault("PT5S")
    Duration maxBackoff();

    /**
     * How long a message this instance cannot read yet (a newer version of its event:
     * {@link NotReadableYetException}) is held, with its queue or partition paused behind it, waiting
     * for an instance that reads it to take the queue over. Longer than a rolling deploy takes; past
     * it the message is dead-lettered with its reason and the queue is read on.
     */
    @WithDefault("PT15M")
    Duration holdUnreadableFor();

    /**
     * Message ids older than this are purged. It must exceed the longest time a message can come
     * back: broker redelivery, a producer replaying from an old offset, a restore of the dead-letter
     * queue. A duplicate older than the horizon would be applied again.
     */
    @WithDefault("P7D")
    Duration retention();

    /** How often the purge runs. */
    @WithDefault("1h")
    String purgeInterval();

    /** The most rows one purge transaction deletes. */
    @WithDefault("10000")
    int purgeBatchSize();

    /**
     * Whether the inbox creates and migrates its own table at start (Flyway, history table
     * {@code inbox_schema_history}, scripts in {@code db/inbox}). Off where a DBA runs migrations.
     */
    @WithDefault("true")
    boolean migrateAtStart();

    /**
     * Whether the service is ready only while it consumes and applies. Right for a service whose job
     * is consuming (inventory-service); a service that also takes requests that do not need the
     * broker says false (order-service takes orders while RabbitMQ is down: that is the outbox's
     * point), and the consumer's state stays in the health check's data.
     */
    @WithDefault("true")
    boolean readyOnlyWhenConsuming();

    /**
     * The most an inbox transaction waits on a row another transaction holds ({@code lock_timeout},
     * set for each inbox transaction alone). The other may be an instance frozen or cut off inside its
     * transaction: without this fence the batch, and every partition behind it, would wait until that
     * session ends, which can be hours. When it fires the batch is rolled back and retried in place
     * (SQLSTATE 55P03, logged "Batch of n is blocked", readiness "blocked since …"): never parked.
     * {@code 0}: wait for ever.
     */
    @WithDefault("PT5S")
    Duration lockTimeout();

    /**
     * The most an inbox transaction may sit idle between two statements before PostgreSQL ends its
     * session and rolls it back ({@code idle_in_transaction_session_timeout}, for each inbox
     * transaction alone). This is what frees the rows of an instance frozen or cut off in the middle
     * of a transaction, so that the instance taking its partitions over can apply them. Its cost: a
     * transaction whose own code pauses longer than this between two statements is ended (SQLSTATE
     * 25P03, "terminating connection due to idle-in-transaction timeout") and retried.
     * {@code 0}: never.
     */
    @WithDefault("PT10S")
    Duration idleInTransactionTimeout();

    /** Switches that break the guarantee on purpose. */
    Unsafe unsafe();

    /** How several instances of this consumer share its messages. */
    Partitioning partitioning();

    /**
     * Instances of one consumer compete for its messages either way; the inbox makes each message take
     * effect once whichever instance gets it. What partitions add is <b>order</b>: without them, two
     * instances on one queue apply two events of one aggregate side by side, in either order.
     *
     * <p>With {@code count} partitions, a consistent-hash exchange (the broker plugin
     * {@code rabbitmq_consistent_hash_exchange}) routes each message by its {@link #hashHeader()} (the
     * aggregate id) to one of {@code count} quorum queues, each with single active consumer. Each
     * partition is read by one instance at a time: the instances share them out through advisory locks
     * in their own database (a lock per partition, {@code count / instances} each, rebalanced when one
     * joins or leaves), and an instance gives a partition up only once what it had in hand from it is
     * applied and acked. Single active consumer is the broker-side fence behind the locks: should two
     * instances ever subscribe to one partition, only one receives.
     *
     * <p>The count is fixed for the life of the queues: changing it re-hashes the aggregates, so drain
     * the partitions first. Choose a multiple of the instance counts you expect (6 splits evenly over
     * 1, 2, 3 and 6).
     */
    interface Partitioning {
        /** 0: one queue, no order between instances. */
        @WithDefault("0")
        int count();

        /** The message header whose value picks the partition: the aggregate's id. */
        @WithDefault("aggregate-id")
        String hashHeader();

        /** How often an instance checks its locks and the other instances, and rebalances. */
        @WithDefault("PT1S")
        Duration heartbeat();

        /**
         * How long PostgreSQL keeps the locks of an instance gone silent (frozen, or cut off by the
         * network) before its partitions go to the others: the lock session's {@code idle_session_timeout}.
         */
        @WithDefault("PT10S")
        Duration lease();

        /** This instance's name among the others (unique per instance). Default: host name/pid. */
        Optional<String> instance();
    }

    interface Unsafe {
        /**
         * Applies every delivery, duplicates included: the inbox does not decide. It exists for one
         * reason: deploy/chaos's negative control, which must see its verifier report duplicate
         * effects when the consumer is not idempotent ({@code INBOX_UNSAFE_DISABLE_DEDUPLICATION}).
         * The service refuses to start with it unless the {@code chaos} profile is active
         * ({@code QUARKUS_PROFILE=prod,chaos}).
         */
        @WithDefault("false")
        boolean disableDeduplication();

        /**
         * Applies messages out of order: the batcher gathers messages for half a second and applies
         * each batch in reverse, so later events of an order take effect before earlier ones. The
         * negative control of order for deploy/chaos ({@code --negative-control order}), whose verifier
         * must catch it. Refused outside the {@code chaos} profile, like {@link #disableDeduplication()}.
         */
        @WithDefault("false")
        boolean applyOutOfOrder();
    }
}
