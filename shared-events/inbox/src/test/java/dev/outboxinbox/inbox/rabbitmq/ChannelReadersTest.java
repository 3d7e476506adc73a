package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxMetadata;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A method reading a channel of the inbox connector without {@code @Inbox} stops the service at start:
 * the channel commits each message's claim once the method returned, and such a method's writes would
 * commit apart from it. (The samples say which channel they read through the test's lookup, not with
 * {@code @Incoming}: Quarkus would wire an annotated sample as a consumer of the test service. The
 * test service's own readers pass the same check at every start.)
 */
class ChannelReadersTest {

    static class Unguarded {
        void apply(String payload) {
        }
    }

    static class Guarded {
        @Inbox
        void apply(String payload, InboxMetadata inbox) {
        }
    }

    @Test
    void aReaderOfAnInboxChannelWithoutInboxIsRefusedByName() {
        List<String> problems = InboxConsumers.withoutInbox(List.of(Unguarded.class, Guarded.class), List.of("orders"),
                method -> method.getName().equals("apply") ? List.of("orders") : List.of());
        assertThat(problems).singleElement().asString()
                .contains("@Incoming(\"orders\") method " + Unguarded.class.getName() + ".apply").contains("without @Inbox");
        assertThat(InboxConsumers.withoutInbox(List.of(Unguarded.class), List.of("greetings"),
                method -> List.of("orders"))).as("a channel of another connector").isEmpty();
    }
}
