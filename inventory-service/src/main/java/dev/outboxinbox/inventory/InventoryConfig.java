package dev.outboxinbox.inventory;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "inventory")
public interface InventoryConfig {

    /** How messages are applied. */
    Processing processing();

    /** How long the inbox remembers a message id. */
    Inbox inbox();

    /** Switches that break the guarantee on purpose. */
    Unsafe unsafe();

    interface Processing {
        /**
         * The most unacked messages the broker hands this service at once. Each is acked only
         * after its batch commits, so prefetch bounds the batch size: with 512,
         * deploy/benchmarks/inventory measured 5,800–6,200 distinct messages/s here.
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
    }

    interface Inbox {
        /**
         * Message ids older than this are purged. It must exceed the longest time a message can
         * come back: broker redelivery, a relay replaying from an old offset, a restore of the
         * dead-letter queue. A duplicate older than the horizon would be applied again.
         */
        @WithDefault("P7D")
        Duration retention();

        /** How often the purge runs. */
        @WithDefault("1h")
        String purgeInterval();

        /** The most rows one purge transaction deletes. */
        @WithDefault("10000")
        int purgeBatchSize();
    }

    interface Unsafe {
        /**
         * Applies every delivery, duplicates included: the inbox does not decide and the outcome
         * key does not guard. It exists for one reason: deploy/chaos's negative control, which
         * must see its verifier report duplicate effects when the consumer is not idempotent
         * ({@code INVENTORY_UNSAFE_DISABLE_DEDUPLICATION}). The service refuses to start with it
         * unless the {@code chaos} profile is active ({@code QUARKUS_PROFILE=prod,chaos}).
         */
        @WithDefault("false")
        boolean disableDeduplication();
    }
}
