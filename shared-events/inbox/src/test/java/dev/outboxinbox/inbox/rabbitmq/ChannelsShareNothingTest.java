package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.inbox.ChannelSettings;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Two channels of one service are two streams: a service that would give them one inbox key, or one
 * queue, partition, dead-letter queue or exchange, or retry exchange, does not start, and says which.
 */
class ChannelsShareNothingTest {

    private static final ChannelSettings GREETINGS = channel("greetings", "greeting-consumer.greetings", "greetings.q", 0,
            "greetings.q.dead-letter");

    @Test
    void twoChannelsOfTheirOwnAreOpened() {
        assertThatCode(() -> InboxConsumers.refuseSharing(List.of(GREETINGS),
                channel("farewells", "greeting-consumer.farewells", "farewells.q", 3, "farewells.q.dead-letter")))
                .doesNotThrowAnyException();
    }

    @Test
    void oneInboxKeyForTwoChannelsIsRefused() {
        assertThatThrownBy(() -> InboxConsumers.refuseSharing(List.of(GREETINGS),
                channel("farewells", "greeting-consumer.greetings", "farewells.q", 0, "farewells.q.dead-letter")))
                .hasMessageContaining("both kept under the consumer name greeting-consumer.greetings")
                .hasMessageContaining("mp.messaging.incoming.farewells.consumer");
    }

    @Test
    void aQueueOrADeadLetterExchangeOfAnotherChannelIsRefused() {
        assertThatThrownBy(() -> InboxConsumers.refuseSharing(List.of(GREETINGS),
                channel("farewells", "greeting-consumer.farewells", "farewells.q", 0, "greetings.q.dead-letter")))
                .hasMessageContaining("[greetings.q.dead-letter]");
        // A partition of one is the other's queue.
        assertThatThrownBy(() -> InboxConsumers.refuseSharing(List.of(channel("a", "a", "x.0", 0, "a.dead-letter")),
                channel("b", "b", "x", 2, "b.dead-letter")))
                .hasMessageContaining("[x.0]");
    }

    private static ChannelSettings channel(String name, String consumer, String queue, int partitions, String deadLetterExchange) {
        return new ChannelSettings(name, "mp.messaging.incoming." + name + ".", consumer, queue, name, "topic", List.of("T"),
                queue + ".dead-letter", deadLetterExchange, queue + ".retry", 10, 16, 65536, Duration.ofMinutes(1),
                new ChannelSettings.Partitioning(partitions, "aggregate-id", Duration.ofSeconds(1), Duration.ofSeconds(10),
                        Optional.empty()),
                Optional.empty());
    }
}
