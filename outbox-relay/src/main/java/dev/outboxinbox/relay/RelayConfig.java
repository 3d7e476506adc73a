package dev.outboxinbox.relay;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.Optional;

/** Everything the relay is told from outside; each key can be set as an environment variable (RELAY_…). */
@ConfigMapping(prefix = "relay")
public interface RelayConfig {

    /** The producer's database, read through logical replication. */
    Source source();

    /** Where the relay keeps its position in the WAL. */
    Offsets offsets();

    /** The broker it publishes to. */
    Broker broker();

    /** Batching, confirms and retries. */
    Publishing publishing();

    /** When health reports the relay as lagging. */
    Health health();

    /** One instance streams from the slot, the others wait as its standby ({@link RelayLeadership}). */
    Leadership leadership();

    /** How a deposed leader is kept from writing and made to stop ({@link RelayLeadership}, {@link FencedOffsetBackingStore}). */
    Fencing fencing();

    interface Fencing {
        /**
         * How long a stepped-down relay may take to stop its engine. Past it the process exits (status 70):
         * a process that cannot stop streaming as a non-leader must not live on.
         */
        @WithDefault("PT30S")
        Duration stopTimeout();

        /**
         * How long a new leader waits for the deposed leader's walsender to end once it has ended it
         * ({@code pg_terminate_backend} of the slot's active pid) before its engine starts.
         */
        @WithDefault("PT10S")
        Duration walsenderTimeout();
    }

    interface Leadership {
        /** How often the leader proves its session alive, and a standby asks for the lock. */
        @WithDefault("PT1S")
        Duration heartbeat();

        /**
         * How long PostgreSQL keeps a silent leader's session, and with it the lock
         * ({@code idle_session_timeout}): the longest a standby waits for a leader cut off by the network.
         */
        @WithDefault("PT10S")
        Duration lease();

        /** This instance's name, as the others and health show it; by default host name and process id. */
        Optional<String> instance();
    }

    interface Health {
        /** Retained WAL beyond this is reported (keep it well under the server's max_slot_wal_keep_size). */
        @WithDefault("536870912")
        long maxRetainedWalBytes();

        /** An unpublished outbox row older than this is reported. */
        @WithDefault("PT1M")
        Duration maxUnpublishedAge();
    }

    interface Source {
        /** Host of the producer's PostgreSQL. */
        @WithDefault("localhost")
        String host();

        @WithDefault("5432")
        int port();

        /** The producer's database, which holds the outbox table and its publication. */
        @WithDefault("orders")
        String database();

        /** A role with REPLICATION and SELECT on the outbox; nothing else. */
        @WithDefault("outbox_relay")
        String user();

        @WithDefault("")
        String password();

        /** The replication slot; one per relay deployment. Reset it together with the offsets (see outbox-relay/README.md). */
        @WithDefault("outbox_relay")
        String slot();

        /** The publication that order-service's migration created, scoped to the outbox table, inserts only. */
        @WithDefault("outbox_publication")
        String publication();

        /** The outbox table, schema-qualified. */
        @WithDefault("public.outbox")
        String table();

        /** How often Debezium polls its queue of decoded changes; small values keep commit-to-publish latency low. */
        @WithDefault("10")
        int pollIntervalMs();

        /** The most changes handed to one batch. */
        @WithDefault("2048")
        int maxBatchSize();

        /** Heartbeat period: an idle outbox still moves the slot forward, so it never pins WAL. */
        @WithDefault("10000")
        int heartbeatIntervalMs();
    }

    interface Offsets {
        /** JDBC URL of the relay's own database, where the offsets table lives. */
        @WithDefault("jdbc:postgresql://localhost:5432/outbox_relay")
        String jdbcUrl();

        @WithDefault("outbox_relay")
        String user();

        @WithDefault("")
        String password();

        /**
         * The least time between two offset writes (each also tells PostgreSQL how far the slot may move on). 0
         * writes after every batch. A batch is still published and confirmed whole before it counts as processed:
         * the interval moves only how much a crash republishes, never whether something is lost.
         */
        @WithDefault("PT0.1S")
        Duration commitInterval();

        /** Unqualified on purpose: Debezium 3.5's JDBC store loops on "already exists" with a qualified name. */
        @WithDefault("relay_offsets")
        String table();
    }

    interface Broker {
        @WithDefault("localhost")
        String host();

        @WithDefault("5672")
        int port();

        @WithDefault("/")
        String virtualHost();

        /** A user that may configure and write the exchanges it publishes to, and nothing else. */
        @WithDefault("outbox_relay")
        String user();

        @WithDefault("")
        String password();
    }

    interface Publishing {
        /** Unconfirmed messages allowed in flight at once. */
        @WithDefault("1000")
        int confirmWindow();

        /** How long a batch may wait for its confirms before it counts as failed and is retried. */
        @WithDefault("PT10S")
        Duration confirmTimeout();

        /** Attempts per batch before the relay restarts its engine from the last committed offset. */
        @WithDefault("10")
        int attempts();

        /** First pause between attempts; doubles each time up to {@link #maxBackoff()}. */
        @WithDefault("PT0.2S")
        Duration initialBackoff();

        @WithDefault("PT10S")
        Duration maxBackoff();

        /** Optional override of the AMQP connection name shown in the management UI. */
        Optional<String> connectionName();
    }
}
