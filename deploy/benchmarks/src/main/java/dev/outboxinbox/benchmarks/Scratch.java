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
    static final String FLOOR_DB = "bench_floor";
    static final String SOURCE_DB = "bench_relay_source";
    static final String OFFSETS_DB = "bench_relay_offsets";
    static final String INBOX_DB = "bench_inbox";
    static final List<String> DATABASES = List.of(CEILING_DB, FLOOR_DB, SOURCE_DB, OFFSETS_DB, INBOX_DB);
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

    /**
     * A fresh database with both services' schemas, each made by its own migrations and the libraries':
     * order-service's in {@code public} with its inbox, inventory-service's in {@code inventory} with its
     * outbox (published as {@code inventoryPublication}), and the relays' offsets and terms in
     * {@code relay}, laid out as theirs. Stock enough that no reservation is ever refused.
     */
    void floorSchemas(String database, String inventoryPublication) {
        ordersSchema(database);
        String url = pg.jdbcUrl(database);
        Flyway.configure().dataSource(url, pg.user(), pg.password())
                .locations("filesystem:" + root.resolve("shared-events/inbox/src/main/resources/db/inbox"))
                .table("inbox_schema_history").baselineOnMigrate(true).baselineVersion("0")
                .load().migrate();
        Flyway.configure().dataSource(url, pg.user(), pg.password()).schemas("inventory")
                .locations("filesystem:" + root.resolve("inventory-service/src/main/resources/db/migration"))
                .load().migrate();
        Flyway.configure().dataSource(url, pg.user(), pg.password()).schemas("inventory")
                .locations("filesystem:" + root.resolve("shared-events/outbox/src/main/resources/db/outbox"))
                .table("outbox_schema_history").baselineOnMigrate(true).baselineVersion("0")
                .placeholders(Map.of("outbox_publication", inventoryPublication, "relay_role", RELAY_ROLE))
                .load().migrate();
        String offsets = " (id varchar(36) NOT NULL, offset_key varchar(1255), offset_val varchar(1255),"
                + " record_insert_ts timestamp NOT NULL, record_insert_seq integer NOT NULL)";
        pg.execute(database,
                "UPDATE inventory.products SET on_hand = 2000000000",
                "CREATE SCHEMA relay",
                "CREATE TABLE relay.relay_leadership (slot_name varchar(64) PRIMARY KEY, epoch bigint NOT NULL, holder text NOT NULL,"
                        + " since timestamptz NOT NULL DEFAULT now())");
        for (String slot : Floor.RELAY_SLOTS) {
            pg.execute(database,
                    "INSERT INTO relay.relay_leadership (slot_name, epoch, holder) VALUES ('" + slot + "', 1, 'floor')",
                    "CREATE TABLE relay." + slot + "_offsets" + offsets);
        }
    }

    void relayRole() {
        pg.execute("postgres", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + RELAY_ROLE + "') THEN "
                + "CREATE ROLE " + RELAY_ROLE + " LOGIN REPLICATION PASSWORD '" + RELAY_PASSWORD + "'; END IF; END $$");
    }

    /** Drops every database (their slots first), the role and the virtual hosts. */
    void cleanUp() {
        DATABASES.forEach(this::drop);
        pg.execute("postgres", "DROP ROLE IF EXISTS " + RELAY_ROLE);
        for (String vhost : VHOSTS) {
            broker.deleteVirtualHost(vhost);
        }
    }

    /** Drops the relay role once no bench_* database is left (a test cleaning up after itself, beside a benchmark that may not be done). */
    void dropRelayRoleIfUnused() {
        pg.execute("postgres", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_database WHERE datname LIKE 'bench\\_%') THEN "
                + "DROP ROLE IF EXISTS " + RELAY_ROLE + "; END IF; END $$");
    }

    /** Drops {@code database}, its (inactive) replication slots first: PostgreSQL keeps a database that has any. */
    void drop(String database) {
        pg.execute("postgres",
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '" + database + "' AND NOT active",
                "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }
}
