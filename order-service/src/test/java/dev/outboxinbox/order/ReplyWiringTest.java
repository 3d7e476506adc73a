package dev.outboxinbox.order;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.InboxConfig;
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
    InboxConfig inbox;

    @Test
    void theInboxReadsTheContractsReplyQueueWithItsArguments() {
        assertThat(inbox.consumer()).isEqualTo("order-service");
        assertThat(inbox.queue()).isEqualTo(Topology.ORDER_REPLIES_QUEUE);
        assertThat(inbox.exchange()).isEqualTo(Topology.INVENTORY_EXCHANGE);
        assertThat(inbox.routingKeys()).containsExactlyInAnyOrderElementsOf(Topology.ORDER_REPLIES_BINDINGS);
        assertThat(inbox.deadLetterExchangeName()).isEqualTo(Topology.ORDER_DEAD_LETTER_EXCHANGE);
        assertThat(inbox.deadLetterQueueName()).isEqualTo(Topology.ORDER_DEAD_LETTER_QUEUE);
        assertThat(inbox.retryExchangeName()).isEqualTo(Topology.ORDER_RETRY_EXCHANGE);
        assertThat(TopologyDeclarer.queueArguments(inbox)).isEqualTo(Topology.orderRepliesQueueArguments());
    }
}
