package dev.outboxinbox.relay;

import dev.outboxinbox.events.MessageHeaders;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * Copies the commit time of the change's transaction ({@code source.ts_ms}: pgoutput's BEGIN carries
 * it) into the {@value MessageHeaders#COMMITTED_AT} header, before the outbox event router drops the
 * envelope; the router keeps the record's headers. (Kafka's own {@code HeaderFrom} cannot read a
 * nested field of a record with a schema: it fails on {@code source.ts_ms}.)
 */
public final class CommitTimeHeader implements Transformation<SourceRecord> {

    @Override
    public SourceRecord apply(SourceRecord record) {
        if (record.value() instanceof Struct envelope && envelope.schema().field("source") != null
                && envelope.get("source") instanceof Struct source && source.schema().field("ts_ms") != null
                && source.get("ts_ms") instanceof Long committed) {
            Headers headers = record.headers().duplicate();
            headers.addLong(MessageHeaders.COMMITTED_AT, committed);
            return record.newRecord(record.topic(), record.kafkaPartition(), record.keySchema(), record.key(),
                    record.valueSchema(), record.value(), record.timestamp(), headers);
        }
        return record;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public void configure(Map<String, ?> configs) {
        // nothing to configure
    }

    @Override
    public void close() {
        // nothing held
    }
}
