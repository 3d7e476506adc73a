package dev.outboxinbox.benchmarks;

import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.flywaydb.core.Flyway;

/**
 * What the benchmark makes on the real servers besides deploy/local, under names of its own, and
 * removes again: its databases (and with them their slots), its relay role, its virtual hosts.
 * Everything is dropped first too, so a run interrupted half-way leaves nothing that breaks the next.
 */
final class Scratch {

    static final String CEILING_DB = "bench_ceiling";
    static final String SOURCE_DB = "bench_relay_source";
    static final String OFFSETS_DB = "bench_relay_offsets";
    static final String INBOX_DB = "bench_inbox";
    static final List<String> DATABASES = List.of(CEILING_DB, SOURCE_DB, OFFSETS_DB, INBOX_DB);
    /** The relays' role: REPLICATION, SELECT on the outbox (order-service's V2 grants it), owner of the offsets database. */
    static final String RELAY_ROLE = "bench_relay";
    static final String RELAY_PASSWORD = "bench-relay-secret";
    static final String PEERS_VHOST = "bench-relay";
    static final String INBOX_VHOST = "bench-inbox";
    static final List<String> VHOSTS = List.of(PEERS_VHOST, INBOX_VHOST);

    private final Path root;
    private final PostgresEndpoint pg = RealServices.postgres();
    private final RabbitMqEndpoint broker = RealServices.rabbitMq();

    Scratch(Path root) {
        this.root = root;
    }

    PostgresEndpoint pg() {
        return pg;
    }

    RabbitMqEndpoint broker() {
        return broker;
    }

    Path root() {
        return root;
    }

    /** A fresh database with order-service's schema, made by order-service's own migrations. */
    void ordersSchema(String database) {
        pg.recreateDatabase(database);
        relayRole();
        Flyway.configure()
                .dataSource(pg.jdbcUrl(database), pg.user(), pg.password())
                .locations("filesystem:" + root.resolve("order-service/src/main/resources/db/migration"))
                .placeholders(Map.of("outbox_publication", "outbox_publication", "relay_role", RELAY_ROLE))
                .load().migrate();
    }

    void relayRole() {
        pg.execute("postgres", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + RELAY_ROLE + "') THEN "
                + "CREATE ROLE " + RELAY_ROLE + " LOGIN REPLICATION PASSWORD '" + RELAY_PASSWORD + "'; END IF; END $$");
    }

    /** Drops every database (their slots first), the role and the virtual hosts. */
    void cleanUp() {
        for (String database : DATABASES) {
            pg.execute("postgres",
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '" + database + "' AND NOT active",
                    "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        }
        pg.execute("postgres", "DROP ROLE IF EXISTS " + RELAY_ROLE);
        for (String vhost : VHOSTS) {
            broker.deleteVirtualHost(vhost);
        }
    }
}
