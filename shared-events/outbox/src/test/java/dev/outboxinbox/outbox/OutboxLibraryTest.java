package dev.outboxinbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.testing.RealServices;
import io.quarkus.narayana.jta.QuarkusTransaction;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import jakarta.transaction.TransactionalException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The library as a service uses it, on the real PostgreSQL: it makes its table, its insert-only
 * publication and the relay's grant by itself, and an event commits with the caller's transaction
 * or not at all.
 */
@QuarkusTest
@WithTestResource(OutboxLibraryTest.FreshDatabase.class)
class OutboxLibraryTest {

    static final String RELAY_ROLE = "outbox_library_test_relay";

    public static class FreshDatabase implements QuarkusTestResourceLifecycleManager {
        @Override
        public Map<String, String> start() {
            Map<String, String> config = RealServices.freshDatasource("outbox_library_test");
            RealServices.postgres().execute("postgres", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '"
                    + RELAY_ROLE + "') THEN CREATE ROLE " + RELAY_ROLE + "; END IF; END $$");
            return config;
        }

        @Override
        public void stop() {
        }
    }

    @Inject
    OutboxWriter outbox;

    @Inject
    OutboxPurge purge;

    @Inject
    DataSource dataSource;

    @Test
    void anEventCommitsWithItsTransactionWithEveryColumn() throws Exception {
        OutboxMessage message = message(Instant.now().truncatedTo(ChronoUnit.MICROS), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        QuarkusTransaction.requiringNew().run(() -> outbox.append(message));

        assertThat(query("SELECT aggregatetype || '|' || aggregateid || '|' || type || '|' || schema_version || '|'"
                + " || payload::text || '|' || traceparent || '|' || (occurred_at = '" + message.occurredAt() + "')"
                + " FROM outbox WHERE id = '" + message.id() + "'"))
                .isEqualTo("greetings|g-1|Greeted|2|{\"text\": \"hello\"}|" + message.traceparent() + "|true");
    }

    @Test
    void anEventOfARolledBackTransactionIsNotThere() throws Exception {
        OutboxMessage message = message(Instant.now(), null);
        assertThatThrownBy(() -> QuarkusTransaction.requiringNew().run(() -> {
            outbox.append(message);
            throw new IllegalStateException("the business failed after the event was appended");
        })).hasMessageContaining("the business failed");
        assertThat(query("SELECT count(*) FROM outbox WHERE id = '" + message.id() + "'")).isEqualTo("0");
    }

    @Test
    void anEventCannotBeCommittedOnItsOwn() {
        assertThatThrownBy(() -> outbox.append(message(Instant.now(), null)))
                .isInstanceOf(TransactionalException.class);
    }

    @Test
    void manyEventsGoInOneStatement() throws Exception {
        List<OutboxMessage> messages = List.of(message(Instant.now(), null), message(Instant.now(), "00-x-y-01"), message(Instant.now(), null));
        QuarkusTransaction.requiringNew().run(() -> outbox.appendAll(messages));
        assertThat(query("SELECT count(*) FROM outbox WHERE id IN ('" + messages.get(0).id() + "', '"
                + messages.get(1).id() + "', '" + messages.get(2).id() + "')")).isEqualTo("3");
    }

    @Test
    void theRelayMayReadTheOutboxThroughAnInsertOnlyPublication() throws Exception {
        assertThat(query("SELECT pubinsert || '|' || pubupdate || '|' || pubdelete FROM pg_publication"
                + " WHERE pubname = 'library_test_publication'")).isEqualTo("true|false|false");
        assertThat(query("SELECT string_agg(tablename, ',') FROM pg_publication_tables WHERE pubname = 'library_test_publication'"))
                .isEqualTo("outbox");
        assertThat(query("SELECT has_table_privilege('" + RELAY_ROLE + "', 'outbox', 'SELECT')::text")).isEqualTo("true");
        assertThat(query("SELECT has_table_privilege('" + RELAY_ROLE + "', 'outbox', 'INSERT')::text")).isEqualTo("false");
    }

    @Test
    void thePurgeDeletesOnlyRowsOlderThanTheRetention() throws Exception {
        OutboxMessage old = message(Instant.now().minus(Duration.ofHours(2)), null);
        OutboxMessage recent = message(Instant.now(), null);
        QuarkusTransaction.requiringNew().run(() -> outbox.appendAll(List.of(old, recent)));
        assertThat(purge.purge()).isPositive();
        assertThat(query("SELECT count(*) FROM outbox WHERE id = '" + old.id() + "'")).isEqualTo("0");
        assertThat(query("SELECT count(*) FROM outbox WHERE id = '" + recent.id() + "'")).isEqualTo("1");
    }

    private static OutboxMessage message(Instant occurredAt, String traceparent) {
        return new OutboxMessage(UUID.randomUUID(), "greetings", "g-1", "Greeted", 2, "{\"text\":\"hello\"}", traceparent, occurredAt);
    }

    private String query(String sql) throws Exception {
        try (Connection connection = dataSource.getConnection(); ResultSet rs = connection.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
