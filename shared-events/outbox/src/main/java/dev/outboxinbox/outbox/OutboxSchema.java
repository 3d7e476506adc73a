package dev.outboxinbox.outbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * The outbox owns its table, its publication and the relay's read grant: its migrations
 * ({@code db/outbox}) run at start with a history table of their own ({@code outbox_schema_history}),
 * so they never collide with the service's versions and a service adds the outbox without writing
 * a migration for it.
 */
@ApplicationScoped
class OutboxSchema {

    private final DataSource dataSource;
    private final OutboxConfig config;

    OutboxSchema(DataSource dataSource, OutboxConfig config) {
        this.dataSource = dataSource;
        this.config = config;
    }

    void migrate(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) StartupEvent event) {
        if (!config.migrateAtStart()) {
            return;
        }
        MigrateResult result = Flyway.configure()
                .dataSource(dataSource)
                .locations("classpath:db/outbox")
                .table("outbox_schema_history")
                .placeholders(Map.of("outbox_publication", config.publication(), "relay_role", config.relayRole()))
                // A database whose schema already has the service's tables: the outbox's history starts here.
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate();
        if (result.migrationsExecuted > 0) {
            Log.infof("Outbox schema migrated to version %s", result.targetSchemaVersion);
        }
    }
}
