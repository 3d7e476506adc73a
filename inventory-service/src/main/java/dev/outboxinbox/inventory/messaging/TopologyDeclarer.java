package dev.outboxinbox.inventory.messaging;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import dev.outboxinbox.events.Topology;
import java.io.IOException;

/**
 * Declares the queues this service owns, with exactly the arguments of {@link Topology} (and of
 * deploy/rabbitmq/definitions.json). Idempotent; done on every connection, so a broker that lost
 * or never had them gets them before consumption starts.
 */
final class TopologyDeclarer {

    private TopologyDeclarer() {
    }

    static void declare(Channel channel) throws IOException {
        channel.exchangeDeclare(Topology.ORDERS_EXCHANGE, BuiltinExchangeType.TOPIC, true);
        channel.exchangeDeclare(Topology.INVENTORY_DEAD_LETTER_EXCHANGE, BuiltinExchangeType.FANOUT, true);
        channel.queueDeclare(Topology.INVENTORY_DEAD_LETTER_QUEUE, true, false, false, Topology.deadLetterQueueArguments());
        channel.queueBind(Topology.INVENTORY_DEAD_LETTER_QUEUE, Topology.INVENTORY_DEAD_LETTER_EXCHANGE, "");
        channel.queueDeclare(Topology.INVENTORY_QUEUE, true, false, false, Topology.inventoryQueueArguments());
        channel.queueBind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING);
        channel.exchangeDeclare(Topology.INVENTORY_RETRY_EXCHANGE, BuiltinExchangeType.FANOUT, true);
        channel.queueBind(Topology.INVENTORY_QUEUE, Topology.INVENTORY_RETRY_EXCHANGE, "");
    }
}
