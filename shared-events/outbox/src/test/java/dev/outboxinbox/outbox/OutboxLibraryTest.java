package dev.outboxinbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.outbox.api.OutboxEvent;
import dev.outboxinbox.testing.RealServices;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
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
    OutboxEmitter emitter;

    @Inject
    OutboxPurge purge;

    /** A service's own event, as its contract module would write it: the emitter needs nothing else. */
    record Greeted(UUID eventId, String to, String text, Instant occurredAt) implements OutboxEvent {
        @Override
        public String aggregateType() {
            return "greetings";
        }

        @Override
        public String aggregateId() {
            return to;
        }

        @Override
        public String eventType() {
            return "Greeted";
        }

        @Override
        public int schemaVersion() {
            return 2;
        }

        @Override
        public String payloadJson() {
            return "{\"to\":\"" + to + "\",\"text\":\"" + text + "\"}";
        }
    }

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
    void theEmitterTakesEverythingFromTheEventAndTheTraceFromTheCurrentSpan() throws Exception {
        Greeted event = new Greeted(UUID.randomUUID(), "ada", "hello", Instant.now().truncatedTo(ChronoUnit.MICROS));
        SpanContext span = SpanContext.create("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", TraceFlags.getSampled(),
                TraceState.getDefault());
        Greeted second = new Greeted(UUID.randomUUID(), "ada", "again", Instant.now());
        Greeted third = new Greeted(UUID.randomUUID(), "eve", "and again", Instant.now());
        try (Scope current = Span.wrap(span).makeCurrent()) {
            QuarkusTransaction.requiringNew().run(() -> {
                emitter.send(event);
                emitter.sendAll(List.of(second, third));
            });
        }
        assertThat(query("SELECT string_agg(DISTINCT traceparent, ',') FROM outbox WHERE id IN ('" + second.eventId() + "', '"
                + third.eventId() + "')")).as("sendAll: every event in the current trace")
                .isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assertThat(query("SELECT aggregatetype || '|' || aggregateid || '|' || type || '|' || schema_version || '|'"
                + " || payload::text || '|' || traceparent || '|' || (occurred_at = '" + event.occurredAt() + "')"
                + " FROM outbox WHERE id = '" + event.eventId() + "'"))
                .isEqualTo("greetings|ada|Greeted|2|{\"to\": \"ada\", \"text\": \"hello\"}"
                        + "|00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01|true");
    }

    @Test
    void theEmitterCarriesTheTraceItIsGivenOrNone() throws Exception {
        Greeted untraced = new Greeted(UUID.randomUUID(), "bob", "hi", Instant.now());
        Greeted given = new Greeted(UUID.randomUUID(), "bob", "hi again", Instant.now());
        Greeted first = new Greeted(UUID.randomUUID(), "cy", "one", Instant.now());
        Greeted second = new Greeted(UUID.randomUUID(), "cy", "two", Instant.now());
        String traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        QuarkusTransaction.requiringNew().run(() -> {
            emitter.send(untraced);
            emitter.send(given, traceparent);
            emitter.sendTraced(List.of(new OutboxEmitter.Traced(first, traceparent), new OutboxEmitter.Traced(second, null)));
        });
        assertThat(query("SELECT coalesce(traceparent, 'none') FROM outbox WHERE id = '" + untraced.eventId() + "'"))
                .as("no current span: no trace made up").isEqualTo("none");
        assertThat(query("SELECT traceparent FROM outbox WHERE id = '" + given.eventId() + "'")).isEqualTo(traceparent);
        assertThat(query("SELECT traceparent FROM outbox WHERE id = '" + first.eventId() + "'")).isEqualTo(traceparent);
        assertThat(query("SELECT coalesce(traceparent, 'none') FROM outbox WHERE id = '" + second.eventId() + "'")).isEqualTo("none");
    }

    @Test
    void theEmitterCannotCommitAnEventOnItsOwn() {
        assertThatThrownBy(() -> emitter.send(new Greeted(UUID.randomUUID(), "dee", "alone", Instant.now())))
                .isInstanceOf(TransactionalException.class);
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
