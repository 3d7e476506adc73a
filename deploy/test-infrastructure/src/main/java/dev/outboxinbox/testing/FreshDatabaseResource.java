package dev.outboxinbox.testing;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.HashMap;
import java.util.Map;

/**
 * Gives a {@code @QuarkusTest} its own, freshly recreated database on the real PostgreSQL, and, with
 * the init arg {@code virtualHost}, its own freshly recreated virtual host on the real RabbitMQ.
 * Use with {@code @WithTestResource(value = FreshDatabaseResource.class, initArgs = @ResourceArg(name = "database", value = "..."))}.
 */
public class FreshDatabaseResource implements QuarkusTestResourceLifecycleManager {

    private String database;
    private String virtualHost;

    @Override
    public void init(Map<String, String> initArgs) {
        database = initArgs.get("database");
        if (database == null || !database.matches("[a-z_][a-z0-9_]*")) {
            throw new IllegalArgumentException("initArg 'database' must be a plain lower-case identifier, got " + database);
        }
        virtualHost = initArgs.get("virtualHost");
    }

    @Override
    public Map<String, String> start() {
        Map<String, String> config = new HashMap<>(RealServices.freshDatasource(database));
        if (virtualHost != null) {
            config.putAll(RealServices.rabbitMq().freshInboxBrokerConfig(virtualHost));
        }
        return config;
    }

    @Override
    public void stop() {
        // The database stays for inspection after a failed run; the next run recreates it.
    }
}
