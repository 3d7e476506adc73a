package dev.outboxinbox.inbox;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.smallrye.common.annotation.NonBlocking;
import io.smallrye.common.annotation.Identifier;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * The whole business code of a consumer built on the library, as a service author writes it: a
 * decoder for its one event type and an {@code @Incoming @Inbox} method. A greeting that says "poison" makes its
 * transaction fail every time (the library must park it and apply the others); "no effect" changes
 * nothing (the business already had it); "refused:…" is one the business says it can never apply;
 * "trace" records the message's trace as {@link InboxMetadata} gives it and as the current span sees
 * it (what an event sent from here through the outbox emitter would continue).
 * A greeting in brackets is unwrapped by recursion, as a naive parser would: nested deep enough, the
 * decoder overflows its stack (an Error, which no exception handler in the decoder's caller expects).
 * A greeting of version 2 is the next version, newer than this consumer reads: held for an upgraded instance.
 * Farewells are a second stream on a second channel, with a decoder of its own (named by the channel's
 * {@code decoder} attribute): "poison" fails there as it does for greetings.
 */
final class GreetingConsumer {

    private GreetingConsumer() {
    }

    @ApplicationScoped
    static class GreetingDecoder implements MessageDecoder<String> {
        @Override
        public String decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
            if (!"Greeted".equals(type)) {
                throw new RejectedMessageException("unknown event type '" + type + "'");
            }
            if (schemaVersion == 2) {
                throw new NotReadableYetException("greeting version " + schemaVersion + " is newer than this consumer reads (1)");
            }
            return body.length > 0 && body[0] == '[' ? unwrap(body, 0) : new String(body, StandardCharsets.UTF_8);
        }

        private static String unwrap(byte[] body, int depth) {
            return body[depth] == '[' ? unwrap(body, depth + 1)
                    : new String(body, depth, Math.max(0, body.length - 2 * depth), StandardCharsets.UTF_8);
        }
    }

    @ApplicationScoped
    @Identifier("farewells")
    static class FarewellDecoder implements MessageDecoder<String> {
        @Override
        public String decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
            if (!"Farewelled".equals(type)) {
                throw new RejectedMessageException("not a farewell: '" + type + "'");
            }
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    @ApplicationScoped
    static class Farewells {

        private final DataSource dataSource;

        Farewells(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        @Incoming("farewells")
        @NonBlocking
        @Inbox
        void farewell(String text, InboxMetadata inbox) {
            try (Connection connection = dataSource.getConnection();
                 PreparedStatement insert = connection.prepareStatement("INSERT INTO farewells (message_id, text) VALUES (?, ?)")) {
                insert.setString(1, inbox.messageId());
                insert.setString(2, text.equals("poison") ? null : text);
                insert.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    @ApplicationScoped
    static class Greetings implements InboxLookahead<String> {

        /** The payloads of every look the channel let this bean take, in order (InboxChannelTest reads them). */
        static final List<List<String>> LOOKS = new CopyOnWriteArrayList<>();

        private final DataSource dataSource;

        Greetings(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        @Override
        public void lookahead(List<String> texts) {
            LOOKS.add(List.copyOf(texts));
        }

        @Incoming("greetings")
        @NonBlocking
        @Inbox
        void greet(String text, InboxMetadata inbox) throws RejectedMessageException {
            if (text.startsWith("refused:")) {
                throw new RejectedMessageException("greeting refused by the business: " + text.substring(8));
            }
            if (text.equals("no effect")) {
                inbox.changedNothing();
                return;
            }
            if (text.equals("thread")) {
                text = Thread.currentThread().getName();
            }
            if (text.equals("trace")) {
                SpanContext current = Span.current().getSpanContext();
                text = inbox.traceparent() + " " + (current.isValid() ? current.getTraceId() + "-" + current.getSpanId() : "none");
            }
            try (Connection connection = dataSource.getConnection();
                 PreparedStatement insert = connection.prepareStatement("INSERT INTO greetings (message_id, text) VALUES (?, ?)")) {
                insert.setString(1, inbox.messageId());
                // "poison" breaks the NOT NULL column: a failure of this message alone, on every attempt.
                insert.setString(2, text.equals("poison") ? null : text);
                insert.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
