package dev.outboxinbox.outbox;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** What the outbox is told by its service, under {@code outbox.*} (environment {@code OUTBOX_*}). */
@ConfigMapping(prefix = "outbox")
public interface OutboxConfig {

    /**
     * How long a row stays in the outbox after it was written. The relay reads the WAL, not the
     * table, so this bounds what you can inspect with SQL and what the relay can republish after
     * losing its slot; deleting a row never unsends it.
     */
    @WithDefault("PT1H")
    Duration retention();

    /** How often the purge runs. */
    @WithDefault("1m")
    String purgeInterval();

    /** The most rows one purge transaction deletes, so a large backlog is purged in short transactions. */
    @WithDefault("10000")
    int purgeBatchSize();

    /** The publication outbox-relay subscribes to (inserts only); the relay's configuration must name the same. */
    @WithDefault("outbox_publication")
    String publication();

    /**
     * The role outbox-relay connects as: it is granted SELECT on the outbox, and nothing else here.
     * Created by the deployment before the service starts; where it does not exist, nothing is granted.
     */
    @WithDefault("outbox_relay")
    String relayRole();

    /**
     * Whether the outbox creates and migrates its table, publication and grant at start (Flyway,
     * history table {@code outbox_schema_history}, scripts in {@code db/outbox}). Off where a DBA runs migrations.
     */
    @WithDefault("true")
    boolean migrateAtStart();
}
