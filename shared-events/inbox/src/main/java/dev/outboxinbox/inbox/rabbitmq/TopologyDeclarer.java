package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import dev.outboxinbox.inbox.ChannelSettings;
import java.io.IOException;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Declares what this consumer owns, from its configuration: its queue (quorum, with at-least-once
 * dead-lettering into its dead-letter queue and a delivery limit), the bindings of its routing keys,
 * the dead-letter exchange and queue, and the retry exchange bound to the queue alone. Partitioned,
 * the routing keys bind the consistent-hash exchange instead, which spreads the messages over the
 * partition queues by their hash header, and the retry exchange feeds that exchange. Idempotent;
 * done on every connection, so a broker that lost or never had them gets them before consumption
 * starts. A broker definitions file (deploy/rabbitmq/definitions.json) must declare the same
 * arguments, or RabbitMQ refuses the second declaration.
 */
public final class TopologyDeclarer {

    private TopologyDeclarer() {
    }

    /** The arguments of the consumer's queue. */
    public static Map<String, Object> queueArguments(ChannelSettings config) {
        return Map.of(
                "x-queue-type", "quorum",
                "x-delivery-limit", config.deliveryLimit(),
                "x-dead-letter-exchange", config.deadLetterExchange(),
                // At-least-once dead-lettering: a message is only removed once the dead-letter queue confirmed it.
                "x-dead-letter-strategy", "at-least-once",
                "x-overflow", "reject-publish");
    }

    /** The arguments of one partition: the queue's, read by one consumer at a time. */
    public static Map<String, Object> partitionArguments(ChannelSettings config) {
        Map<String, Object> arguments = new HashMap<>(queueArguments(config));
        arguments.put("x-single-active-consumer", true);
        return Map.copyOf(arguments);
    }

    /** The arguments of the consistent-hash exchange in front of the partitions. */
    public static Map<String, Object> partitionExchangeArguments(ChannelSettings config) {
        return Map.of("hash-header", config.partitioning().hashHeader());
    }

    /** The arguments of the dead-letter queue: no delivery limit, a dead letter waits for a person. */
    public static Map<String, Object> deadLetterQueueArguments() {
        return Map.of("x-queue-type", "quorum");
    }

    static void declare(Channel channel, ChannelSettings config) throws IOException {
        channel.exchangeDeclare(config.exchange(),
                BuiltinExchangeType.valueOf(config.exchangeType().toUpperCase(Locale.ROOT)), true);
        channel.exchangeDeclare(config.deadLetterExchange(), BuiltinExchangeType.FANOUT, true);
        channel.queueDeclare(config.deadLetterQueue(), true, false, false, deadLetterQueueArguments());
        channel.queueBind(config.deadLetterQueue(), config.deadLetterExchange(), "");
        channel.exchangeDeclare(config.retryExchange(), BuiltinExchangeType.FANOUT, true);
        if (config.partitioning().count() == 0) {
            channel.queueDeclare(config.queue(), true, false, false, queueArguments(config));
            for (String routingKey : config.routingKeys()) {
                channel.queueBind(config.queue(), config.exchange(), routingKey);
            }
            channel.queueBind(config.queue(), config.retryExchange(), "");
            return;
        }
        try {
            channel.exchangeDeclare(config.queue(), CONSISTENT_HASH, true, false, partitionExchangeArguments(config));
        } catch (IOException e) {
            throw new IOException("cannot declare the partitions' exchange " + config.queue() + " (" + CONSISTENT_HASH
                    + "): is the broker plugin rabbitmq_consistent_hash_exchange enabled?", e);
        }
        for (String partition : config.queues()) {
            channel.queueDeclare(partition, true, false, false, partitionArguments(config));
            // The binding key of a consistent-hash exchange is the partition's weight: equal shares.
            channel.queueBind(partition, config.queue(), "1");
        }
        for (String routingKey : config.routingKeys()) {
            channel.exchangeBind(config.queue(), config.exchange(), routingKey);
        }
        channel.exchangeBind(config.queue(), config.retryExchange(), "");
    }

    /** The exchange type of the broker plugin rabbitmq_consistent_hash_exchange. */
    public static final String CONSISTENT_HASH = "x-consistent-hash";
}
