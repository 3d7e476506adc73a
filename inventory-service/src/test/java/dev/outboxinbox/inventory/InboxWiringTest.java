package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHeaders;
import dev.outboxinbox.inbox.rabbitmq.TopologyDeclarer;
import jakarta.inject.Inject;
import org.junit.jupiter.api.Test;

/**
 * The inbox library knows nothing of this system; inventory-service tells it, in application.properties,
 * what to read. Those settings must be the contract's topology (which deploy/rabbitmq/definitions.json
 * equals, TopologyDefinitionsTest), or RabbitMQ refuses the library's declarations where compose
 * declared the queue first, and the library's header names must be the contract's wire names.
 */
@InventoryServiceTest
class InboxWiringTest {

    @Inject
    InboxConfig config;

    @Test
    void theInboxReadsTheContractsQueueWithItsArguments() {
        // BatchEffects: no channel, so its one stream is inbox.*'s.
        ChannelSettings inbox = ChannelSettings.ofService(config);
        assertThat(inbox.queue()).isEqualTo(Topology.INVENTORY_QUEUE);
        assertThat(inbox.exchange()).isEqualTo(Topology.ORDERS_EXCHANGE);
        assertThat(inbox.routingKeys()).containsExactlyElementsOf(Topology.INVENTORY_BINDINGS);
        assertThat(inbox.deadLetterExchange()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_EXCHANGE);
        assertThat(inbox.deadLetterQueue()).isEqualTo(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        assertThat(inbox.retryExchange()).isEqualTo(Topology.INVENTORY_RETRY_EXCHANGE);
        assertThat(TopologyDeclarer.queueArguments(inbox)).isEqualTo(Topology.inventoryQueueArguments());
        assertThat(inbox.partitioning().count()).isEqualTo(Topology.INVENTORY_PARTITIONS);
        assertThat(inbox.queues()).isEqualTo(Topology.inventoryPartitions());
        assertThat(inbox.partitioning().hashHeader()).isEqualTo(Topology.INVENTORY_PARTITION_KEY);
        assertThat(TopologyDeclarer.partitionArguments(inbox)).isEqualTo(Topology.inventoryPartitionArguments());
        assertThat(TopologyDeclarer.deadLetterQueueArguments()).isEqualTo(Topology.deadLetterQueueArguments());
        assertThat(inbox.consumer()).isEqualTo("inventory-service");
    }

    @Test
    void theInboxUsesTheContractsHeaderNames() {
        assertThat(InboxHeaders.SCHEMA_VERSION).isEqualTo(MessageHeaders.SCHEMA_VERSION);
        assertThat(InboxHeaders.DEAD_LETTER_REASON).isEqualTo(MessageHeaders.DEAD_LETTER_REASON);
        assertThat(InboxHeaders.ORIGINAL_EXCHANGE).isEqualTo(MessageHeaders.ORIGINAL_EXCHANGE);
        assertThat(InboxHeaders.ORIGINAL_ROUTING_KEY).isEqualTo(MessageHeaders.ORIGINAL_ROUTING_KEY);
    }
}
