package dev.outboxinbox.inventory.messaging;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Envelope;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import io.quarkus.logging.Log;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;

/**
 * Parks a message in the dead-letter queue with the reason, the original exchange and routing key,
 * and everything it came with. {@link #park} returns when the broker confirmed the copy; only then
 * is the original acked, so a crash in between redelivers it (a second copy in the dead-letter
 * queue, never none).
 */
final class DeadLetters {

    static final String ORIGINAL_EXCHANGE = "x-original-exchange";
    static final String ORIGINAL_ROUTING_KEY = "x-original-routing-key";

    private final Channel channel;
    private volatile boolean returned;

    /** @param channel a channel of its own, put in confirm mode here, used from one thread */
    DeadLetters(Channel channel) throws java.io.IOException {
        this.channel = channel;
        channel.confirmSelect();
        // The broker returns an unroutable mandatory message before it confirms it.
        channel.addReturnListener(r -> returned = true);
    }

    void park(Envelope envelope, AMQP.BasicProperties original, byte[] body, String reason) throws Exception {
        Map<String, Object> headers = new HashMap<>(original.getHeaders() == null ? Map.of() : original.getHeaders());
        headers.put(MessageHeaders.DEAD_LETTER_REASON, reason);
        headers.put(ORIGINAL_EXCHANGE, envelope.getExchange());
        headers.put(ORIGINAL_ROUTING_KEY, envelope.getRoutingKey());
        AMQP.BasicProperties properties = original.builder().headers(headers).deliveryMode(2).timestamp(new Date()).build();
        Log.warnf("Dead-lettering message %s (routing key %s): %s",
                original.getMessageId() == null ? "<no id>" : original.getMessageId(), envelope.getRoutingKey(), reason);
        returned = false;
        channel.basicPublish(Topology.INVENTORY_DEAD_LETTER_EXCHANGE, "", true, properties, body);
        channel.waitForConfirmsOrDie(10_000);
        if (returned) {
            throw new IllegalStateException("the dead-letter exchange routed it nowhere (is " + Topology.INVENTORY_DEAD_LETTER_QUEUE + " bound?)");
        }
    }
}
