package dev.outboxinbox.order.outbox;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "outbox")
public interface OutboxConfig {

    /**
     * How long a row stays in the outbox after it was written. The relay reads the WAL, not the
     * table, so this only bounds what you can inspect with SQL; deleting a row never unsends it.
     */
    @WithDefault("PT1H")
    Duration retention();

    /** How often the purge runs (also read by {@code OutboxPurge}'s schedule). */
    @WithDefault("1m")
    String purgeInterval();

    /** The most rows one purge transaction deletes, so a large backlog is purged in short transactions. */
    @WithDefault("10000")
    int purgeBatchSize();
}
