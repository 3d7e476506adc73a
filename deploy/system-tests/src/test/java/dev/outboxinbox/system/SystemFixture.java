package dev.outboxinbox.system;

import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The whole system's world for a test, laid out as deploy/local lays it out, under names of its
 * own so it never touches the demo: three databases each owned by its service's role, the relay's
 * role with REPLICATION (two relay instances: orders' outbox, inventory's replies), a virtual host
 * with one user per service whose permissions are read from deploy/rabbitmq/users. Everything is recreated, so no earlier run leaks in.
 */
final class SystemFixture {

    static final Path ROOT = Path.of(System.getProperty("repository.root", "../.."));
    static final String ORDERS_DB = "system_orders";
    static final String INVENTORY_DB = "system_inventory";
    static final String RELAY_DB = "system_relay";
    static final String ORDER_ROLE = "system_order_service";
    static final String RELAY_ROLE = "system_outbox_relay";
    static final String INVENTORY_ROLE = "system_inventory_service";
    static final String PASSWORD = "system-test-secret";
    static final String SLOT = "test_system";
    static final String REPLY_SLOT = "test_system_replies";
    static final String VHOST = "system-test";

    private SystemFixture() {
    }

    static PostgresEndpoint postgres() {
        return RealServices.postgres();
    }

    static RabbitMqEndpoint rabbitMq() {
        return RealServices.rabbitMq();
    }

    static void prepare() throws IOException {
        PostgresEndpoint pg = postgres();
        for (String[] roleAndDb : new String[][] {{ORDER_ROLE, ORDERS_DB, ""}, {RELAY_ROLE, RELAY_DB, " REPLICATION"},
                {INVENTORY_ROLE, INVENTORY_DB, ""}}) {
            String role = roleAndDb[0];
            pg.execute("postgres", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + role + "') THEN "
                    + "CREATE ROLE " + role + " LOGIN" + roleAndDb[2] + " PASSWORD '" + PASSWORD + "'; END IF; END $$");
            pg.recreateDatabase(roleAndDb[1]);
            pg.execute("postgres", "ALTER DATABASE " + roleAndDb[1] + " OWNER TO " + role,
                    "REVOKE CONNECT ON DATABASE " + roleAndDb[1] + " FROM PUBLIC",
                    "GRANT CONNECT ON DATABASE " + roleAndDb[1] + " TO " + role);
        }
        pg.execute("postgres", "GRANT CONNECT ON DATABASE " + ORDERS_DB + " TO " + RELAY_ROLE,
                "GRANT CONNECT ON DATABASE " + INVENTORY_DB + " TO " + RELAY_ROLE);

        RabbitMqEndpoint broker = rabbitMq();
        broker.recreateVirtualHost(VHOST);
        // The production permissions, from the file deploy/local and compose create the users from.
        for (String line : Files.readAllLines(ROOT.resolve("deploy/rabbitmq/users"))) {
            String[] fields = line.trim().split("\\s+");
            if (line.isBlank() || line.startsWith("#") || fields.length != 5) {
                continue;
            }
            String user = "system_" + fields[0];
            if (broker.control().rabbitmqctl("add_user", user, PASSWORD).exitCode() != 0) {
                broker.control().rabbitmqctlOrFail("change_password", user, PASSWORD);
            }
            broker.control().rabbitmqctlOrFail("set_permissions", "-p", VHOST, user, fields[2], fields[3], fields[4]);
        }
    }

    static Map<String, String> orderService() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("QUARKUS_DATASOURCE_JDBC_URL", postgres().jdbcUrl(ORDERS_DB));
        env.put("QUARKUS_DATASOURCE_USERNAME", ORDER_ROLE);
        env.put("QUARKUS_DATASOURCE_PASSWORD", PASSWORD);
        env.put("OUTBOX_RELAY_ROLE", RELAY_ROLE);
        env.put("RABBITMQ_HOST", rabbitMq().host());
        env.put("RABBITMQ_PORT", String.valueOf(rabbitMq().port()));
        env.put("RABBITMQ_VIRTUAL_HOST", VHOST);
        env.put("RABBITMQ_USERNAME", "system_order_service");
        env.put("RABBITMQ_PASSWORD", PASSWORD);
        return env;
    }

    static Map<String, String> inventoryService() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("QUARKUS_DATASOURCE_JDBC_URL", postgres().jdbcUrl(INVENTORY_DB));
        env.put("QUARKUS_DATASOURCE_USERNAME", INVENTORY_ROLE);
        env.put("QUARKUS_DATASOURCE_PASSWORD", PASSWORD);
        env.put("RABBITMQ_HOST", rabbitMq().host());
        env.put("RABBITMQ_PORT", String.valueOf(rabbitMq().port()));
        env.put("RABBITMQ_VIRTUAL_HOST", VHOST);
        env.put("RABBITMQ_USERNAME", "system_inventory_service");
        env.put("RABBITMQ_PASSWORD", PASSWORD);
        env.put("OUTBOX_RELAY_ROLE", RELAY_ROLE);
        return env;
    }

    static Map<String, String> outboxRelay() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RELAY_SOURCE_HOST", postgres().host());
        env.put("RELAY_SOURCE_PORT", String.valueOf(postgres().port()));
        env.put("RELAY_SOURCE_DATABASE", ORDERS_DB);
        env.put("RELAY_SOURCE_USER", RELAY_ROLE);
        env.put("RELAY_SOURCE_PASSWORD", PASSWORD);
        env.put("RELAY_SOURCE_SLOT", SLOT);
        env.put("RELAY_OFFSETS_JDBC_URL", postgres().jdbcUrl(RELAY_DB));
        env.put("RELAY_OFFSETS_USER", RELAY_ROLE);
        env.put("RELAY_OFFSETS_PASSWORD", PASSWORD);
        env.put("RELAY_BROKER_HOST", rabbitMq().host());
        env.put("RELAY_BROKER_PORT", String.valueOf(rabbitMq().port()));
        env.put("RELAY_BROKER_VIRTUAL_HOST", VHOST);
        env.put("RELAY_BROKER_USER", "system_outbox_relay");
        env.put("RELAY_BROKER_PASSWORD", PASSWORD);
        return env;
    }

    /** The second relay instance: inventory's outbox (its replies), its own slot and offsets table. */
    static Map<String, String> replyRelay() {
        Map<String, String> env = outboxRelay();
        env.put("RELAY_SOURCE_DATABASE", INVENTORY_DB);
        env.put("RELAY_SOURCE_SLOT", REPLY_SLOT);
        env.put("RELAY_OFFSETS_TABLE", "relay_offsets_inventory");
        return env;
    }

    /** Tracing on, exported to {@code collector} over OTLP/HTTP, quickly (a test waits for the spans). */
    static Map<String, String> traced(Map<String, String> env, java.net.URI collector, String serviceName) {
        env.put("OTEL_SDK_DISABLED", "false");
        env.put("OTEL_EXPORTER_OTLP_ENDPOINT", collector.toString());
        env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
        env.put("OTEL_SERVICE_NAME", serviceName);
        env.put("QUARKUS_OTEL_BSP_SCHEDULE_DELAY", "200ms");
        return env;
    }

    /** The harness's view: the databases as the services' roles, the broker as the tests' administrator. */
    static SystemUnderTest system(int orderPort, int inventoryPort) {
        PostgresEndpoint pg = postgres();
        RabbitMqEndpoint broker = rabbitMq();
        return new SystemUnderTest(
                java.net.URI.create("http://127.0.0.1:" + orderPort),
                java.net.URI.create("http://127.0.0.1:" + inventoryPort),
                new Database(pg.jdbcUrl(ORDERS_DB), ORDER_ROLE, PASSWORD),
                new Database(pg.jdbcUrl(INVENTORY_DB), INVENTORY_ROLE, PASSWORD),
                SLOT, REPLY_SLOT,
                new Broker(broker.host(), broker.port(), VHOST, broker.user(), broker.password(), broker.management()));
    }

    static Path packaged(String service) {
        return ROOT.resolve(service).resolve("target").resolve("quarkus-app");
    }

    /** Drops the relays' slots when the tests are done, so they pin no WAL until the next run. */
    static void dropSlot() {
        postgres().execute("postgres", "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name IN ('" + SLOT + "', '" + REPLY_SLOT + "') AND NOT active");
    }
}
