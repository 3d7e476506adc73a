package dev.outboxinbox.order;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.rabbitmq.InboxConsumers;
import dev.outboxinbox.inbox.rabbitmq.TopologyDeclarer;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

/**
 * order-service tells the inbox library, in application.properties, what to read: the contract's
 * topology (which deploy/rabbitmq/definitions.json equals), or RabbitMQ refuses the library's
 * declarations where compose declared the queue first.
 */
@OrderServiceTest
class ReplyWiringTest {

    @Inject
    InboxConsumers consumers;

    @Test
    void theInboxReadsTheContractsReplyQueueWithItsArguments() {
        ChannelSettings inbox = consumers.channel("inventory-replies").orElseThrow().settings();
        assertThat(inbox.consumer()).as("the inbox key of every reply taken so far").isEqualTo("order-service");
        assertThat(inbox.queue()).isEqualTo(Topology.ORDER_REPLIES_QUEUE);
        assertThat(inbox.exchange()).isEqualTo(Topology.INVENTORY_EXCHANGE);
        assertThat(inbox.routingKeys()).containsExactlyInAnyOrderElementsOf(Topology.ORDER_REPLIES_BINDINGS);
        assertThat(inbox.deadLetterExchange()).isEqualTo(Topology.ORDER_DEAD_LETTER_EXCHANGE);
        assertThat(inbox.deadLetterQueue()).isEqualTo(Topology.ORDER_DEAD_LETTER_QUEUE);
        assertThat(inbox.retryExchange()).isEqualTo(Topology.ORDER_RETRY_EXCHANGE);
        assertThat(TopologyDeclarer.queueArguments(inbox)).isEqualTo(Topology.orderRepliesQueueArguments());
    }
}
