package dev.outboxinbox.relay;

import java.util.Properties;
import java.util.regex.Pattern;

/** The embedded engine's configuration, derived from {@link RelayConfig}. Every choice here is a delivery guarantee. */
final class DebeziumProperties {

    static final String HEARTBEAT_MESSAGE_PREFIX = "outbox-relay-heartbeat";
    /** Debezium names every topic it makes after this prefix; the outbox router renames only outbox inserts. */
    static final String TOPIC_PREFIX = "outbox-relay";

    private DebeziumProperties() {
    }

    /** @param term the leader's term this engine runs in: its offsets are written only while that term lasts */
    static Properties of(RelayConfig config, long term) {
        RelayConfig.Source source = config.source();
        RelayConfig.Offsets offsets = config.offsets();
        Properties p = new Properties();
        p.setProperty("name", "outbox-relay");
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        // The offsets key includes topic.prefix: changing it forgets the stored position.
        p.setProperty("topic.prefix", TOPIC_PREFIX);

        // Offsets live in PostgreSQL, only past batches that were confirmed whole, and only while this
        // engine's term lasts: a deposed leader's late commit is refused (FencedOffsetBackingStore).
        // Written at the end of a batch once commitInterval has passed since the last write (and on a
        // graceful stop): a write and the slot's flush are two waits on other threads in the engine's one
        // thread, between one batch and the next (deploy/benchmarks/README, "Where a hop's time goes").
        p.setProperty("offset.storage", FencedOffsetBackingStore.class.getName());
        p.setProperty(FencedOffsetBackingStore.SLOT, source.slot());
        p.setProperty(FencedOffsetBackingStore.TERM, String.valueOf(term));
        p.setProperty(FencedOffsetBackingStore.LEASE_MILLIS, String.valueOf(config.leadership().lease().toMillis()));
        p.setProperty("offset.storage.jdbc.connection.url", offsets.jdbcUrl());
        p.setProperty("offset.storage.jdbc.connection.user", offsets.user());
        p.setProperty("offset.storage.jdbc.connection.password", offsets.password());
        p.setProperty("offset.storage.jdbc.table.name", offsets.table());
        p.setProperty("offset.flush.interval.ms", String.valueOf(offsets.commitInterval().toMillis()));
        p.setProperty("offset.flush.timeout.ms", "10000");

        // The source: pgoutput over a slot, the publication order-service created, no snapshot.
        p.setProperty("database.hostname", source.host());
        p.setProperty("database.port", String.valueOf(source.port()));
        p.setProperty("database.user", source.user());
        p.setProperty("database.password", source.password());
        p.setProperty("database.dbname", source.database());
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", source.slot());
        p.setProperty("publication.name", source.publication());
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("table.include.list", source.table());
        // Not forwarded (the payload carries occurredAt); skipping it saves a timestamp parse per event.
        p.setProperty("column.exclude.list", source.table() + ".occurred_at");
        // Events start with the slot: the outbox holds rows already relayed, or about to be purged.
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("tombstones.on.delete", "false");
        // An idle outbox must not pin WAL: the heartbeat writes a WAL record in this database
        // (no table, no write grant needed) and lets the offset, and so the slot, move on.
        // Transactional (true): a BEGIN/message/COMMIT. After a restart Debezium looks for a COMMIT
        // past its stored one before it streams again (WalPositionLocator); a non-transactional
        // message is never one, so a relay restarted on an idle outbox searched, and pinned the WAL,
        // until the next order (found by deploy/chaos/run --seed 6510).
        p.setProperty("heartbeat.interval.ms", String.valueOf(source.heartbeatIntervalMs()));
        p.setProperty("heartbeat.action.query",
                "SELECT pg_logical_emit_message(true, '" + HEARTBEAT_MESSAGE_PREFIX + "', now()::text)");
        // The heartbeat's own logical message moves the position; it is not an event to publish.
        p.setProperty("message.prefix.exclude.list", HEARTBEAT_MESSAGE_PREFIX);
        p.setProperty("poll.interval.ms", String.valueOf(source.pollIntervalMs()));
        p.setProperty("max.batch.size", String.valueOf(source.maxBatchSize()));
        p.setProperty("max.queue.size", String.valueOf(source.maxBatchSize() * 4));
        // Debezium retries a "retriable" error forever by default, even one that never passes (a slot
        // made before its publication). Two retries, then the engine stops and RelayEngine takes over:
        // it reports why, repairs what it can (SlotRecovery) and restarts with its own backoff.
        p.setProperty("errors.max.retries", "2");
        p.setProperty("retriable.restart.connector.wait.ms", "3000");
        // Let the batch in hand finish and be committed on a graceful stop: no duplicates from a clean restart.
        p.setProperty("record.processing.shutdown.timeout.ms", "30000");
        p.setProperty("record.processing.order", "ORDERED");

        // First the commit time: the transaction's, from the change event's source block (pgoutput's
        // BEGIN carries it), copied into a header that the router keeps. The router's own timestamp
        // is the time Debezium read the change, which hides how long the event waited in the WAL.
        p.setProperty("transforms", "committedAt,outbox");
        p.setProperty("transforms.committedAt.type", CommitTimeHeader.class.getName());
        p.setProperty("transforms.committedAt.predicate", "isOutboxTable");

        // The outbox event router: exchange = aggregatetype, routing key = type, message_id = id.
        p.setProperty("transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter");
        // Only the outbox table's changes are outbox events. Anything else the slot decodes (another
        // tool's pg_logical_emit_message, a table someone added to the publication) keeps its
        // Debezium topic and is skipped by OutboxBatchHandler, never a reason to stop.
        p.setProperty("transforms.outbox.predicate", "isOutboxTable");
        p.setProperty("predicates", "isOutboxTable");
        p.setProperty("predicates.isOutboxTable.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches");
        p.setProperty("predicates.isOutboxTable.pattern", Pattern.quote(TOPIC_PREFIX + "." + source.table()));
        p.setProperty("transforms.outbox.route.by.field", "aggregatetype");
        p.setProperty("transforms.outbox.route.topic.replacement", "${routedByValue}");
        p.setProperty("transforms.outbox.table.field.event.id", "id");
        p.setProperty("transforms.outbox.table.field.event.key", "aggregateid");
        p.setProperty("transforms.outbox.table.field.event.payload", "payload");
        p.setProperty("transforms.outbox.table.fields.additional.placement",
                "type:header:" + OutboundMessage.ROUTER_TYPE
                        + ",schema_version:header:schema-version"
                        + ",traceparent:header:traceparent");
        p.setProperty("transforms.outbox.route.tombstone.on.empty.payload", "false");
        return p;
    }
}
