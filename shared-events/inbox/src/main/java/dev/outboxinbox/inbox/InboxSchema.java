package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * The inbox owns its table: its migrations ({@code db/inbox}) run at start with a history table of
 * their own ({@code inbox_schema_history}), so they never collide with the service's versions and
 * a service adds the inbox without writing a migration for it. Before the consumer starts.
 */
@ApplicationScoped
class InboxSchema {

    static final String HISTORY_TABLE = "inbox_schema_history";

    private final DataSource dataSource;
    private final InboxConfig config;

    InboxSchema(DataSource dataSource, InboxConfig config) {
        this.dataSource = dataSource;
        this.config = config;
    }

    void migrate(@Observes @Priority(jakarta.interceptor.Interceptor.Priority.PLATFORM_BEFORE) StartupEvent event) {
        if (!config.migrateAtStart()) {
            return;
        }
        MigrateResult result = Flyway.configure()
                .dataSource(dataSource)
                .locations("classpath:db/inbox")
                .table(HISTORY_TABLE)
                // A database whose schema already has the service's tables: the inbox's history starts here.
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate();
        if (result.migrationsExecuted > 0) {
            Log.infof("Inbox schema migrated to version %s", result.targetSchemaVersion);
        }
    }
}
