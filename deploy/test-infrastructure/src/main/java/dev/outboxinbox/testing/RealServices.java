package dev.outboxinbox.testing;

import java.net.URI;
import java.util.Map;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.postgresql.PostgreSQLContainer;
import org.testcontainers.rabbitmq.RabbitMQContainer;

/**
 * Where the tests find PostgreSQL and RabbitMQ. Never a mock: the delivery path is only tested
 * against the real servers.
 *
 * <ol>
 *   <li>The environment names them ({@code TEST_POSTGRES_HOST}, {@code TEST_RABBITMQ_HOST} and
 *       friends): use those. This is how {@code .ci/run} runs on a machine without Docker.</li>
 *   <li>Otherwise, if a Docker engine answers, start them once per JVM with Testcontainers
 *       (PostgreSQL with {@code wal_level=logical}, as the relay needs).</li>
 *   <li>Otherwise fail, naming the variables to set.</li>
 * </ol>
 */
public final class RealServices {

    static final String POSTGRES_IMAGE = "postgres:15";
    static final String RABBITMQ_IMAGE = "rabbitmq:3.13.7-management";
    /** deploy/rabbitmq/enabled_plugins, which compose mounts and deploy/local/prepare-services enables (a test keeps them equal). */
    public static final String RABBITMQ_ENABLED_PLUGINS =
            "[rabbitmq_management,rabbitmq_prometheus,rabbitmq_consistent_hash_exchange].\n";

    private static PostgresEndpoint postgres;
    private static RabbitMqEndpoint rabbitMq;

    private RealServices() {
    }

    public static synchronized PostgresEndpoint postgres() {
        if (postgres == null) {
            postgres = env("TEST_POSTGRES_HOST") != null ? postgresFromEnvironment() : startPostgres();
        }
        return postgres;
    }

    public static synchronized RabbitMqEndpoint rabbitMq() {
        if (rabbitMq == null) {
            rabbitMq = env("TEST_RABBITMQ_HOST") != null ? rabbitMqFromEnvironment() : startRabbitMq();
        }
        return rabbitMq;
    }

    private static PostgresEndpoint postgresFromEnvironment() {
        return new PostgresEndpoint(env("TEST_POSTGRES_HOST"), Integer.parseInt(envOr("TEST_POSTGRES_PORT", "5432")),
                envOr("TEST_POSTGRES_USER", "postgres"), envOr("TEST_POSTGRES_PASSWORD", ""));
    }

    private static RabbitMqEndpoint rabbitMqFromEnvironment() {
        // Stopping and starting the broker needs rabbitmqctl on this machine: the variables name a local broker.
        return new RabbitMqEndpoint(env("TEST_RABBITMQ_HOST"), Integer.parseInt(envOr("TEST_RABBITMQ_PORT", "5672")),
                envOr("TEST_RABBITMQ_USER", "guest"), envOr("TEST_RABBITMQ_PASSWORD", "guest"), BrokerControl.local(),
                URI.create(envOr("TEST_RABBITMQ_MANAGEMENT_URL", "http://" + env("TEST_RABBITMQ_HOST") + ":15672")));
    }

    @SuppressWarnings("resource") // lives as long as the test JVM; Testcontainers' Ryuk removes it
    private static PostgresEndpoint startPostgres() {
        requireDocker("PostgreSQL", "TEST_POSTGRES_HOST, TEST_POSTGRES_PORT, TEST_POSTGRES_USER, TEST_POSTGRES_PASSWORD");
        PostgreSQLContainer container = new PostgreSQLContainer(POSTGRES_IMAGE)
                .withCommand("postgres", "-c", "wal_level=logical", "-c", "max_connections=200");
        container.start();
        return new PostgresEndpoint(container.getHost(), container.getMappedPort(5432),
                container.getUsername(), container.getPassword());
    }

    @SuppressWarnings("resource")
    private static RabbitMqEndpoint startRabbitMq() {
        requireDocker("RabbitMQ", "TEST_RABBITMQ_HOST, TEST_RABBITMQ_PORT, TEST_RABBITMQ_USER, TEST_RABBITMQ_PASSWORD");
        RabbitMQContainer container = new RabbitMQContainer(RABBITMQ_IMAGE)
                .withCopyToContainer(Transferable.of(RABBITMQ_ENABLED_PLUGINS), "/etc/rabbitmq/enabled_plugins");
        container.start();
        return new RabbitMqEndpoint(container.getHost(), container.getAmqpPort(),
                container.getAdminUsername(), container.getAdminPassword(), BrokerControl.inContainer(args -> {
                    try {
                        String[] command = new String[args.size() + 1];
                        command[0] = "rabbitmqctl";
                        for (int i = 0; i < args.size(); i++) {
                            command[i + 1] = args.get(i);
                        }
                        var result = container.execInContainer(command);
                        return new BrokerControl.Result(result.getExitCode(), result.getStdout() + result.getStderr());
                    } catch (Exception e) {
                        return new BrokerControl.Result(-1, e.toString());
                    }
                }), URI.create(container.getHttpUrl()));
    }

    private static void requireDocker(String service, String variables) {
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            throw new IllegalStateException("No " + service + " to test against: set " + variables
                    + " to a running server (bash .ci/run does), or start a Docker engine for Testcontainers.");
        }
    }

    private static String env(String name) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? null : value;
    }

    private static String envOr(String name, String fallback) {
        String value = env(name);
        return value == null ? fallback : value;
    }

    /** Quarkus configuration for a datasource on a freshly recreated database. */
    public static Map<String, String> freshDatasource(String database) {
        PostgresEndpoint pg = postgres();
        pg.recreateDatabase(database);
        return Map.of(
                "quarkus.datasource.jdbc.url", pg.jdbcUrl(database),
                "quarkus.datasource.username", pg.user(),
                "quarkus.datasource.password", pg.password());
    }
}
