package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import dev.outboxinbox.inbox.InboxConfig;
import java.io.IOException;
import java.util.Locale;
import java.util.Map;

/**
 * Declares what this consumer owns, from its configuration: its queue (quorum, with at-least-once
 * dead-lettering into its dead-letter queue and a delivery limit), the bindings of its routing keys,
 * the dead-letter exchange and queue, and the retry exchange bound to the queue alone. Idempotent;
 * done on every connection, so a broker that lost or never had them gets them before consumption
 * starts. A broker definitions file (deploy/rabbitmq/definitions.json) must declare the same
 * arguments, or RabbitMQ refuses the second declaration.
 */
public final class TopologyDeclarer {

    private TopologyDeclarer() {
    }

    /** The arguments of the consumer's queue. */
    public static Map<String, Object> queueArguments(InboxConfig config) {
        return Map.of(
                "x-queue-type", "quorum",
                "x-delivery-limit", config.deliveryLimit(),
                "x-dead-letter-exchange", config.deadLetterExchangeName(),
                // At-least-once dead-lettering: a message is only removed once the dead-letter queue confirmed it.
                "x-dead-letter-strategy", "at-least-once",
                "x-overflow", "reject-publish");
    }

    /** The arguments of the dead-letter queue: no delivery limit, a dead letter waits for a person. */
    public static Map<String, Object> deadLetterQueueArguments() {
        return Map.of("x-queue-type", "quorum");
    }

    static void declare(Channel channel, InboxConfig config) throws IOException {
        channel.exchangeDeclare(config.exchange(),
                BuiltinExchangeType.valueOf(config.exchangeType().toUpperCase(Locale.ROOT)), true);
        channel.exchangeDeclare(config.deadLetterExchangeName(), BuiltinExchangeType.FANOUT, true);
        channel.queueDeclare(config.deadLetterQueueName(), true, false, false, deadLetterQueueArguments());
        channel.queueBind(config.deadLetterQueueName(), config.deadLetterExchangeName(), "");
        channel.queueDeclare(config.queue(), true, false, false, queueArguments(config));
        for (String routingKey : config.routingKeys()) {
            channel.queueBind(config.queue(), config.exchange(), routingKey);
        }
        channel.exchangeDeclare(config.retryExchangeName(), BuiltinExchangeType.FANOUT, true);
        channel.queueBind(config.queue(), config.retryExchangeName(), "");
    }
}
