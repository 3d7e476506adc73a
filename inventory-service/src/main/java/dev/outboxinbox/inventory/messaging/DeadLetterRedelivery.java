package dev.outboxinbox.inventory.messaging;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
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
 * id, type and headers, through {@value Topology#INVENTORY_RETRY_EXCHANGE}, so they reach this
 * consumer and no other subscriber. Each dead letter is removed only after the broker confirmed
 * its copy in the queue. Safe to repeat: the inbox absorbs a message that took effect meanwhile.
 */
@ApplicationScoped
public class DeadLetterRedelivery {

    /** Headers that describe the dead-lettering, not the message: they stay behind. */
    private static final List<String> DEAD_LETTER_HEADERS = List.of(MessageHeaders.DEAD_LETTER_REASON,
            MessageHeaders.ORIGINAL_EXCHANGE, MessageHeaders.ORIGINAL_ROUTING_KEY, "x-death",
            "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason", "x-delivery-count");

    private final BrokerSettings broker;

    DeadLetterRedelivery(BrokerSettings broker) {
        this.broker = broker;
    }

    /** One dead letter as a person sees it. */
    public record DeadLetter(String messageId, String type, String reason) {
    }

    /** @return every dead letter now waiting, oldest first; none is moved */
    public List<DeadLetter> list() throws Exception {
        try (Connection connection = broker.factory().newConnection("inventory-dead-letters-list");
             Channel channel = connection.createChannel()) {
            List<DeadLetter> letters = new ArrayList<>();
            for (GetResponse letter : takeAll(channel)) {
                Object reason = letter.getProps().getHeaders() == null ? null
                        : letter.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON);
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
        try (Connection connection = broker.factory().newConnection("inventory-dead-letters-redeliver");
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
                channel.basicPublish(Topology.INVENTORY_RETRY_EXCHANGE, "", true, withoutDeadLetterHeaders(letter.getProps()),
                        letter.getBody());
                channel.waitForConfirmsOrDie(10_000);
                if (returned[0]) {
                    throw new IllegalStateException(Topology.INVENTORY_RETRY_EXCHANGE + " routes to no queue: is "
                            + Topology.INVENTORY_QUEUE + " bound to it?");
                }
                channel.basicAck(letter.getEnvelope().getDeliveryTag(), false);
                sent.add(Objects.requireNonNullElse(id, "(no message id)"));
                Log.infof("Dead letter %s sent back to %s", id, Topology.INVENTORY_QUEUE);
            }
        }
        return sent;
    }

    /** Every dead letter now waiting, unacked on this channel (so they return to the queue when it closes). */
    private static List<GetResponse> takeAll(Channel channel) throws Exception {
        long waiting = channel.messageCount(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        List<GetResponse> taken = new ArrayList<>();
        for (GetResponse letter; taken.size() < waiting
                && (letter = channel.basicGet(Topology.INVENTORY_DEAD_LETTER_QUEUE, false)) != null; ) {
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
