package dev.outboxinbox.benchmarks;

import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** outbox-relay as it is packaged ({@code outbox-relay/target/quarkus-app}), with its defaults. */
final class OurRelay implements Peer {

    private static final String SLOT = "bench_outbox_relay";
    private static final String OFFSETS_TABLE = "relay_offsets";

    private final Scratch scratch;
    private final Path java;
    private final File log;
    private ServiceProcess process;

    OurRelay(Scratch scratch, Path java, File log) {
        this.scratch = scratch;
        this.java = java;
        this.log = log;
    }

    @Override
    public String name() {
        return "outbox-relay";
    }

    @Override
    public String slot() {
        return SLOT;
    }

    @Override
    public void start() throws Exception {
        PostgresEndpoint pg = scratch.pg();
        RabbitMqEndpoint broker = scratch.broker();
        Map<String, String> config = new LinkedHashMap<>();
        config.put("relay.source.host", pg.host());
        config.put("relay.source.port", String.valueOf(pg.port()));
        config.put("relay.source.database", Scratch.SOURCE_DB);
        config.put("relay.source.user", Scratch.RELAY_ROLE);
        config.put("relay.source.password", Scratch.RELAY_PASSWORD);
        config.put("relay.source.slot", SLOT);
        config.put("relay.offsets.jdbc-url", pg.jdbcUrl(Scratch.OFFSETS_DB));
        config.put("relay.offsets.user", Scratch.RELAY_ROLE);
        config.put("relay.offsets.password", Scratch.RELAY_PASSWORD);
        config.put("relay.offsets.table", OFFSETS_TABLE);
        config.put("relay.broker.host", broker.host());
        config.put("relay.broker.port", String.valueOf(broker.port()));
        config.put("relay.broker.virtual-host", Scratch.PEERS_VHOST);
        config.put("relay.broker.user", broker.user());
        config.put("relay.broker.password", broker.password());
        process = ServiceProcess.start(java, scratch.root().resolve("outbox-relay/target/quarkus-app"),
                ServiceProcess.asEnvironment(config), log);
    }

    @Override
    public void stop() throws Exception {
        if (process != null) {
            process.stopGracefully();
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
