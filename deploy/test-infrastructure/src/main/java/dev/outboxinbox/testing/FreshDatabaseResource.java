package dev.outboxinbox.testing;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/**
 * Gives a {@code @QuarkusTest} its own, freshly recreated database on the real PostgreSQL.
 * Use with {@code @WithTestResource(value = FreshDatabaseResource.class, initArgs = @ResourceArg(name = "database", value = "..."))}.
 */
public class FreshDatabaseResource implements QuarkusTestResourceLifecycleManager {

    private String database;

    @Override
    public void init(Map<String, String> initArgs) {
        database = initArgs.get("database");
        if (database == null || !database.matches("[a-z_][a-z0-9_]*")) {
            throw new IllegalArgumentException("initArg 'database' must be a plain lower-case identifier, got " + database);
        }
    }

    @Override
    public Map<String, String> start() {
        return RealServices.freshDatasource(database);
    }

    @Override
    public void stop() {
        // The database stays for inspection after a failed run; the next run recreates it.
    }
}
