package dev.outboxinbox.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The whole business code of a consumer built on the library, as a service author writes it: a
 * decoder for its one event type and a per-message handler. A greeting that says "poison" makes its
 * transaction fail every time (the library must park it and apply the others); "no effect" changes
 * nothing (the business already had it).
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
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    @ApplicationScoped
    static class Greetings implements MessageHandler<String> {

        private final DataSource dataSource;

        Greetings(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        @Override
        public String handle(InboxMessage<String> message) {
            if (message.payload().equals("no effect")) {
                return null;
            }
            try (Connection connection = dataSource.getConnection();
                 PreparedStatement insert = connection.prepareStatement("INSERT INTO greetings (message_id, text) VALUES (?, ?)")) {
                insert.setString(1, message.messageId());
                // "poison" breaks the NOT NULL column: a failure of this message alone, on every attempt.
                insert.setString(2, message.payload().equals("poison") ? null : message.payload());
                insert.executeUpdate();
                return "GREETED";
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
