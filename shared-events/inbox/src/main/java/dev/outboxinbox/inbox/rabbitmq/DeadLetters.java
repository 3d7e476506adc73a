package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Envelope;
import dev.outboxinbox.inbox.InboxHeaders;
import io.quarkus.logging.Log;
import java.io.IOException;
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

    private final Connection connection;
    private final String exchange;
    private final String queue;
    private Channel channel;
    private volatile boolean returned;

    /**
     * @param connection the session's connection; the confirm channel is opened here, and again whenever it closed
     * @param exchange the dead-letter exchange, bound to {@code queue}
     */
    DeadLetters(Connection connection, String exchange, String queue) {
        this.connection = connection;
        this.exchange = exchange;
        this.queue = queue;
    }

    void park(Envelope envelope, AMQP.BasicProperties original, byte[] body, String reason) throws Exception {
        Map<String, Object> headers = new HashMap<>(original.getHeaders() == null ? Map.of() : original.getHeaders());
        headers.put(InboxHeaders.DEAD_LETTER_REASON, reason);
        headers.put(InboxHeaders.ORIGINAL_EXCHANGE, envelope.getExchange());
        headers.put(InboxHeaders.ORIGINAL_ROUTING_KEY, envelope.getRoutingKey());
        AMQP.BasicProperties properties = original.builder().headers(headers).deliveryMode(2).timestamp(new Date()).build();
        Log.warnf("Dead-lettering message %s (routing key %s): %s",
                original.getMessageId() == null ? "<no id>" : original.getMessageId(), envelope.getRoutingKey(), reason);
        Channel confirming = channel();
        returned = false;
        confirming.basicPublish(exchange, "", true, properties, body);
        // On a nack or a timeout this closes the channel; the next park opens a new one.
        confirming.waitForConfirmsOrDie(10_000);
        if (returned) {
            throw new IllegalStateException("the dead-letter exchange " + exchange + " routed it nowhere (is " + queue + " bound?)");
        }
    }

    /**
     * A channel closes on any channel-level error (a nack, a confirm timeout, an exchange deleted
     * under it): a closed one is replaced, so one failure does not fail every park after it.
     */
    private Channel channel() throws IOException {
        if (channel == null || !channel.isOpen()) {
            channel = connection.createChannel();
            channel.confirmSelect();
            // The broker returns an unroutable mandatory message before it confirms it.
            channel.addReturnListener(r -> returned = true);
        }
        return channel;
    }
}
