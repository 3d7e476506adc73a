package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHeaders;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Sends dead letters back to this service's queue once their cause is fixed: with their message
 * id, type and headers, through its retry exchange ({@code inbox.retry-exchange}), so they reach this
 * consumer and no other subscriber. Each dead letter is removed only after the broker confirmed
 * its copy in the queue. Safe to repeat: the inbox absorbs a message that took effect meanwhile.
 */
@ApplicationScoped
public class DeadLetterRedelivery {

    /** Headers that describe the dead-lettering, not the message: they stay behind. */
    private static final List<String> DEAD_LETTER_HEADERS = List.of(InboxHeaders.DEAD_LETTER_REASON,
            InboxHeaders.ORIGINAL_EXCHANGE, InboxHeaders.ORIGINAL_ROUTING_KEY, "x-death",
            "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason", "x-delivery-count");

    private final BrokerSettings broker;
    private final String queue;
    private final String deadLetterQueue;
    private final String retryExchange;
    private final String consumer;

    DeadLetterRedelivery(BrokerSettings broker, InboxConfig config) {
        this.broker = broker;
        this.queue = config.queue();
        this.deadLetterQueue = config.deadLetterQueueName();
        this.retryExchange = config.retryExchangeName();
        this.consumer = config.consumer();
    }

    /** One dead letter as a person sees it. */
    public record DeadLetter(String messageId, String type, String reason) {
    }

    /** How many messages wait in the dead-letter queue; none is moved. */
    public long depth() throws Exception {
        try (Connection connection = broker.factory().newConnection(consumer + "-dead-letters-depth");
             Channel channel = connection.createChannel()) {
            return channel.messageCount(deadLetterQueue);
        }
    }

    public String deadLetterQueue() {
        return deadLetterQueue;
    }

    /** @return every dead letter now waiting, oldest first; none is moved */
    public List<DeadLetter> list() throws Exception {
        try (Connection connection = broker.factory().newConnection(consumer + "-dead-letters-list");
             Channel channel = connection.createChannel()) {
            List<DeadLetter> letters = new ArrayList<>();
            for (GetResponse letter : takeAll(channel)) {
                Object reason = letter.getProps().getHeaders() == null ? null
                        : letter.getProps().getHeaders().get(InboxHeaders.DEAD_LETTER_REASON);
                letters.add(new DeadLetter(letter.getProps().getMessageId(), letter.getProps().getType(),
                        reason == null ? "(no reason: dead-lettered by the broker)" : reason.toString()));
            }
            return letters; // closing the channel puts every one back, unacked
        }
    }

    /**
     * @param messageId one dead letter, or all of them if empty
     * @return the message ids sent back to the queue
     */
    public List<String> redeliver(Optional<String> messageId) throws Exception {
        List<String> sent = new ArrayList<>();
        try (Connection connection = broker.factory().newConnection(consumer + "-dead-letters-redeliver");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            boolean[] returned = {false};
            channel.addReturnListener(r -> returned[0] = true);
            for (GetResponse letter : takeAll(channel)) {
                String id = letter.getProps().getMessageId();
                if (messageId.isPresent() && !messageId.get().equals(id)) {
                    continue; // goes back to the dead-letter queue with the channel
                }
                returned[0] = false;
                channel.basicPublish(retryExchange, "", true, withoutDeadLetterHeaders(letter.getProps()),
                        letter.getBody());
                channel.waitForConfirmsOrDie(10_000);
                if (returned[0]) {
                    throw new IllegalStateException(retryExchange + " routes to no queue: is " + queue + " bound to it?");
                }
                channel.basicAck(letter.getEnvelope().getDeliveryTag(), false);
                sent.add(Objects.requireNonNullElse(id, "(no message id)"));
                Log.infof("Dead letter %s sent back to %s", id, queue);
            }
        }
        return sent;
    }

    /** Every dead letter now waiting, unacked on this channel (so they return to the queue when it closes). */
    private List<GetResponse> takeAll(Channel channel) throws Exception {
        long waiting = channel.messageCount(deadLetterQueue);
        List<GetResponse> taken = new ArrayList<>();
        for (GetResponse letter; taken.size() < waiting
                && (letter = channel.basicGet(deadLetterQueue, false)) != null; ) {
            taken.add(letter);
        }
        return taken;
    }

    private static AMQP.BasicProperties withoutDeadLetterHeaders(AMQP.BasicProperties properties) {
        Map<String, Object> headers = new HashMap<>(properties.getHeaders() == null ? Map.of() : properties.getHeaders());
        DEAD_LETTER_HEADERS.forEach(headers::remove);
        return properties.builder().headers(headers).build();
    }
}
