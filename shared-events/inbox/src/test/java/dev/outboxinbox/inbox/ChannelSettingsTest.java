package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.eclipse.microprofile.config.Config;
import org.junit.jupiter.api.Test;

/**
 * A channel's settings come from its attributes, each with a default derived from the channel's name or
 * taken from the service's inbox.*; the inbox key is the channel's own unless named.
 */
class ChannelSettingsTest {

    @Test
    void aChannelWithOnlyItsRoutingKeysIsNamedAfterItselfAndTakesTheServicesTuning() {
        ChannelSettings farewells = ChannelSettings.ofChannel("farewells", attributes(Map.of("routing-keys", "Farewelled, Waved")),
                service(Map.of("inbox.prefetch", "64", "inbox.partitioning.lease", "PT30S")));

        assertThat(farewells.consumer()).as("the inbox key's first half").isEqualTo("greeting-consumer.farewells");
        assertThat(farewells.queue()).isEqualTo("greeting-consumer.farewells");
        assertThat(farewells.exchange()).isEqualTo("farewells");
        assertThat(farewells.exchangeType()).isEqualTo("topic");
        assertThat(farewells.routingKeys()).containsExactly("Farewelled", "Waved");
        assertThat(farewells.deadLetterQueue()).isEqualTo("greeting-consumer.farewells.dead-letter");
        assertThat(farewells.deadLetterExchange()).isEqualTo("greeting-consumer.farewells.dead-letter");
        assertThat(farewells.retryExchange()).isEqualTo("greeting-consumer.farewells.retry");
        assertThat(farewells.prefetch()).as("the service's default for its channels").isEqualTo(64);
        assertThat(farewells.deliveryLimit()).isEqualTo(10);
        assertThat(farewells.partitioning().count()).isZero();
        assertThat(farewells.partitioning().lease()).isEqualTo(Duration.ofSeconds(30));
        assertThat(farewells.queues()).containsExactly("greeting-consumer.farewells");
        assertThat(farewells.key("queue")).isEqualTo("mp.messaging.incoming.farewells.queue");
    }

    @Test
    void aChannelsOwnAttributesWin() {
        Map<String, String> given = new HashMap<>(Map.of("consumer", "order-service", "queue", "order.inventory-replies",
                "exchange", "inventory", "routing-keys", "InventoryReserved", "dead-letter-exchange", "order.dead-letter",
                "retry-exchange", "order.retry", "prefetch", "32", "partitioning.count", "3", "decoder", "replies"));
        ChannelSettings replies = ChannelSettings.ofChannel("inventory-replies", attributes(given), service(Map.of("inbox.prefetch", "64")));

        assertThat(replies.consumer()).isEqualTo("order-service");
        assertThat(replies.deadLetterQueue()).isEqualTo("order.inventory-replies.dead-letter");
        assertThat(replies.deadLetterExchange()).isEqualTo("order.dead-letter");
        assertThat(replies.retryExchange()).isEqualTo("order.retry");
        assertThat(replies.prefetch()).isEqualTo(32);
        assertThat(replies.queues()).containsExactly("order.inventory-replies.0", "order.inventory-replies.1", "order.inventory-replies.2");
        assertThat(replies.decoder()).contains("replies");
    }

    @Test
    void whatCannotWorkIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> ChannelSettings.ofChannel("farewells", attributes(Map.of()), service(Map.of())))
                .hasMessageContaining("mp.messaging.incoming.farewells.routing-keys is not set");
        assertThatThrownBy(() -> ChannelSettings.ofChannel("farewells", attributes(Map.of("routing-keys", "Farewelled",
                "consumer", "x".repeat(65))), service(Map.of())))
                .hasMessageContaining("mp.messaging.incoming.farewells.consumer must be 1 to 64 characters");
        assertThatThrownBy(() -> ChannelSettings.ofService(service(Map.of())))
                .hasMessageContaining("inbox.queue is not set");
        assertThat(ChannelSettings.ofChannel("all", attributes(Map.of("exchange-type", "fanout")), service(Map.of())).routingKeys())
                .as("a fanout exchange takes no routing keys").isEmpty();
    }

    /** The attributes as SmallRye hands them to the connector: the keys after mp.messaging.incoming.<channel>. */
    private static Config attributes(Map<String, String> attributes) {
        return new SmallRyeConfigBuilder().addDefaultInterceptors().withDefaultValues(attributes).build();
    }

    private static InboxConfig service(Map<String, String> inbox) {
        Map<String, String> values = new HashMap<>(inbox);
        values.put("quarkus.application.name", "greeting-consumer");
        SmallRyeConfig config = new SmallRyeConfigBuilder().addDefaultInterceptors().withMapping(InboxConfig.class)
                .withDefaultValues(values).build();
        return config.getConfigMapping(InboxConfig.class);
    }
}
