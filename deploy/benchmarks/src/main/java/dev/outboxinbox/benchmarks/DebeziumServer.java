package dev.outboxinbox.benchmarks;

import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Debezium Server (the distribution from Maven Central, unpacked by deploy/benchmarks/run into a cache) with its
 * RabbitMQ sink: what a user would run instead of outbox-relay. Configured as close to the relay as
 * it allows: the same slot settings, publication, batch and queue sizes, poll interval, offsets in
 * PostgreSQL flushed after every batch, the same outbox router, persistent messages to the same
 * exchange. What it does not do, from its sink's source (RabbitMqStreamChangeConsumer): it waits for
 * the broker's confirms once per batch ({@code waitForConfirmsOrDie}), it publishes without
 * {@code mandatory} (an unroutable event is dropped by the broker and its offset committed), and a
 * nack or a confirm timeout throws and stops the server.
 */
final class DebeziumServer implements Peer {

    private static final String SLOT = "bench_debezium_server";
    private static final String OFFSETS_TABLE = "dbz_offsets";

    private final Scratch scratch;
    private final Path home;
    private final Path workDirectory;
    private final Path java;
    private final File log;
    private Process process;

    /**
     * @param home          the unpacked distribution ({@code debezium-server/}, with {@code lib/}), left as it is
     * @param workDirectory where it runs: its {@code config/application.properties} is written there
     */
    DebeziumServer(Scratch scratch, Path home, Path workDirectory, Path java, File log) {
        this.scratch = scratch;
        this.home = home;
        this.workDirectory = workDirectory;
        this.java = java;
        this.log = log;
    }

    @Override
    public String name() {
        return "Debezium Server";
    }

    @Override
    public String slot() {
        return SLOT;
    }

    @Override
    public void start() throws IOException {
        writeConfig();
        Path runner;
        try (var files = Files.list(home)) {
            runner = files.filter(f -> f.getFileName().toString().endsWith("-runner.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no *-runner.jar in " + home));
        }
        // As its run.sh does, with the JVM options the services run with (ServiceProcess), and the
        // opening its Quarkus needs on Java 25. Quarkus reads config/ of the working directory.
        List<String> command = new ArrayList<>(List.of(java.toString(), "-Xmx512m", "-XX:+UseSerialGC",
                "--add-opens=java.base/java.lang=ALL-UNNAMED",
                "-cp", runner + File.pathSeparator + home.resolve("config/lib") + File.pathSeparator + home.resolve("lib") + "/*",
                "io.debezium.server.Main"));
        process = new ProcessBuilder(command).directory(workDirectory.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
    }

    /** {@code config/application.properties}: no {@code ${…}} in values, the server would expand them. */
    private void writeConfig() throws IOException {
        PostgresEndpoint pg = scratch.pg();
        RabbitMqEndpoint broker = scratch.broker();
        Map<String, String> p = new LinkedHashMap<>();
        p.put("quarkus.http.port", "0"); // any free port: nothing here calls it
        p.put("quarkus.log.console.json", "false");
        p.put("debezium.sink.type", "rabbitmq");
        p.put("debezium.sink.rabbitmq.connection.host", broker.host());
        p.put("debezium.sink.rabbitmq.connection.port", String.valueOf(broker.port()));
        p.put("debezium.sink.rabbitmq.connection.username", broker.user());
        p.put("debezium.sink.rabbitmq.connection.password", broker.password());
        p.put("debezium.sink.rabbitmq.connection.virtual.host", Scratch.PEERS_VHOST);
        p.put("debezium.sink.rabbitmq.exchange", OrderEvent.AGGREGATE_TYPE);
        p.put("debezium.sink.rabbitmq.routingKey", OrderCreated.TYPE);
        p.put("debezium.sink.rabbitmq.deliveryMode", "2");
        p.put("debezium.sink.rabbitmq.ackTimeout", "30000");
        // The payload as it is in the row, as outbox-relay sends it (not re-encoded as a JSON string).
        p.put("debezium.format.key", "simplestring");
        p.put("debezium.format.value", "simplestring");
        p.put("debezium.source.connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.put("debezium.source.offset.storage", "io.debezium.storage.jdbc.offset.JdbcOffsetBackingStore");
        p.put("debezium.source.offset.storage.jdbc.connection.url", pg.jdbcUrl(Scratch.OFFSETS_DB));
        p.put("debezium.source.offset.storage.jdbc.connection.user", Scratch.RELAY_ROLE);
        p.put("debezium.source.offset.storage.jdbc.connection.password", Scratch.RELAY_PASSWORD);
        p.put("debezium.source.offset.storage.jdbc.table.name", OFFSETS_TABLE);
        // As outbox-relay writes its offsets (RELAY_OFFSETS_COMMIT_INTERVAL's default): the same work per batch on both sides.
        p.put("debezium.source.offset.flush.interval.ms", "100");
        p.put("debezium.source.database.hostname", pg.host());
        p.put("debezium.source.database.port", String.valueOf(pg.port()));
        p.put("debezium.source.database.user", Scratch.RELAY_ROLE);
        p.put("debezium.source.database.password", Scratch.RELAY_PASSWORD);
        p.put("debezium.source.database.dbname", Scratch.SOURCE_DB);
        p.put("debezium.source.topic.prefix", "bench");
        p.put("debezium.source.plugin.name", "pgoutput");
        p.put("debezium.source.slot.name", SLOT);
        p.put("debezium.source.publication.name", "outbox_publication");
        p.put("debezium.source.publication.autocreate.mode", "disabled");
        p.put("debezium.source.table.include.list", "public.outbox");
        p.put("debezium.source.column.exclude.list", "public.outbox.occurred_at");
        p.put("debezium.source.snapshot.mode", "no_data");
        p.put("debezium.source.tombstones.on.delete", "false");
        // outbox-relay's defaults (RelayConfig): the same batch, queue and poll interval.
        p.put("debezium.source.poll.interval.ms", "10");
        p.put("debezium.source.max.batch.size", "2048");
        p.put("debezium.source.max.queue.size", "8192");
        p.put("debezium.transforms", "outbox");
        p.put("debezium.transforms.outbox.type", "io.debezium.transforms.outbox.EventRouter");
        p.put("debezium.transforms.outbox.route.by.field", "aggregatetype");
        p.put("debezium.transforms.outbox.table.field.event.id", "id");
        p.put("debezium.transforms.outbox.table.field.event.key", "aggregateid");
        p.put("debezium.transforms.outbox.table.field.event.payload", "payload");
        p.put("debezium.transforms.outbox.table.fields.additional.placement",
                "type:header:type,schema_version:header:schema-version,traceparent:header:traceparent");
        p.put("debezium.transforms.outbox.route.tombstone.on.empty.payload", "false");
        String text = p.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining("\n", "", "\n"));
        if (text.contains("${")) {
            throw new IllegalStateException("Debezium Server would expand ${…} in its configuration: " + text);
        }
        Files.createDirectories(workDirectory.resolve("config"));
        Files.writeString(workDirectory.resolve("config/application.properties"), text);
    }

    @Override
    public void stop() throws InterruptedException {
        if (process != null) {
            process.destroy();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
            process = null;
        }
    }

    @Override
    public long pid() {
        return process.pid();
    }

    @Override
    public void forgetOffsets() {
        scratch.pg().execute(Scratch.OFFSETS_DB, "DROP TABLE IF EXISTS " + OFFSETS_TABLE);
    }
}
