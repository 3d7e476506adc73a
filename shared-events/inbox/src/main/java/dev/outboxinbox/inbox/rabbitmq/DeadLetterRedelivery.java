package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.InboxHeaders;
import io.quarkus.logging.Log;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

/**
 * The dead-letter queue, looked at and sent back: {@link #list()} shows what waits and why,
 * {@link #redeliver} sends dead letters back to this service's queue once their cause is fixed, with
 * their message id, type and headers, through its retry exchange (the channel's {@code retry-exchange}), so
 * they reach this consumer and no other subscriber. Safe to repeat: the inbox absorbs a message that
 * took effect meanwhile.
 *
 * <p>AMQP cannot read a queue without taking its messages, and a message handed back unacked counts
 * as a delivery on a quorum queue (x-delivery-count); from RabbitMQ 4.0 a quorum queue drops a message
 * past its delivery limit (20 by default), so a dead letter looked at 20 times would be gone. So
 * nothing is ever handed back: each look takes every dead letter, writes a fresh copy of each back to
 * the tail of the queue (or to the retry exchange), in order, waits until the broker confirmed every
 * copy, and only then acks the ones it took. The queue ends as it was, its order kept. A crash
 * between the confirms and the ack leaves each dead letter twice, never none (sent back twice, the
 * inbox absorbs the second); one that arrives during a look lands before the copies. Only a failed
 * look (the broker gone, a copy refused) hands what it took back unacked, counting one delivery each.
 *
 * <p>The looks share one connection and one channel, kept open between them. Closed right after its
 * acks, a channel handed back part of what it had just acked: a quorum queue (RabbitMQ 3.10) applies
 * the acks of basic.get deliveries after the channel's end has returned them, so stale copies of dead
 * letters already written back (or sent on) appeared in the queue after the look (DeadLetterLookTest:
 * a look, then a fourth dead letter where three were). Kept open, every ack is settled. A failed look
 * discards the connection, which hands back what it took; the next look opens a new one.
 */
public class DeadLetterRedelivery {

    /** The broker's count of a message's returns to a quorum queue: a fresh copy has had none. */
    private static final String DELIVERY_COUNT = "x-delivery-count";
    /** Headers that describe the dead-lettering, not the message: they stay behind. */
    private static final List<String> DEAD_LETTER_HEADERS = List.of(InboxHeaders.DEAD_LETTER_REASON,
            InboxHeaders.ORIGINAL_EXCHANGE, InboxHeaders.ORIGINAL_ROUTING_KEY, "x-death",
            "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason", DELIVERY_COUNT);
    /** How long one look waits for the broker to confirm all its copies. */
    private static final long CONFIRM_MILLIS = 30_000;

    private final BrokerSettings broker;
    private final String queue;
    private final String deadLetterQueue;
    private final String deadLetterExchange;
    private final String retryExchange;
    private final String consumer;

    /** The looks' connection and channel (in confirm mode), kept open between looks; guarded by this. */
    private Connection connection;
    private volatile Channel channel;
    /** Set by the broker's return of an unroutable mandatory copy, which comes before its confirm. */
    private volatile boolean returned;

    /** The dead letters of one consumed stream (one per channel: {@link InboxConsumers#deadLetters}). */
    DeadLetterRedelivery(BrokerSettings broker, ChannelSettings config) {
        this.broker = broker;
        this.queue = config.queue();
        this.deadLetterQueue = config.deadLetterQueue();
        this.deadLetterExchange = config.deadLetterExchange();
        this.retryExchange = config.retryExchange();
        this.consumer = config.consumer();
    }

    /** One dead letter as a person sees it. */
    public record DeadLetter(String messageId, String type, String reason) {
    }

    /** How many messages wait in the dead-letter queue; none is touched. */
    public long depth() throws Exception {
        try (Connection connection = broker.factory().newConnection(consumer + "-dead-letters-depth");
             Channel channel = connection.createChannel()) {
            return channel.messageCount(deadLetterQueue);
        }
    }

    public String deadLetterQueue() {
        return deadLetterQueue;
    }

    /** The queue its dead letters were read from, and go back to. */
    public String queue() {
        return queue;
    }

    /** @return every dead letter now waiting, oldest first; each stays, in place, uncounted */
    public synchronized List<DeadLetter> list() throws Exception {
        return look(look -> {
            look.writeBack(look.taken);
            look.done();
            return look.taken.stream().map(DeadLetterRedelivery::describe).toList();
        });
    }

    /**
     * @param messageId one dead letter, or all of them if empty
     * @return the message ids sent back to the queue (the other dead letters stay, in place, uncounted)
     */
    public List<String> redeliver(Optional<String> messageId) throws Exception {
        return redeliver(messageId, Optional.empty());
    }

    /**
     * @param messageId      one dead letter, or any if empty
     * @param reasonContains only the dead letters whose reason contains this text (the cause that was fixed: after a
     *                       consumer's upgrade, "newer than this consumer reads"), or any if empty
     * @return the message ids sent back to the queue (the other dead letters stay, in place, uncounted)
     */
    public synchronized List<String> redeliver(Optional<String> messageId, Optional<String> reasonContains) throws Exception {
        List<GetResponse> sentBack = look(look -> {
            List<GetResponse> chosen = look.taken.stream()
                    .filter(letter -> messageId.isEmpty() || messageId.get().equals(letter.getProps().getMessageId()))
                    .filter(letter -> reasonContains.isEmpty() || describe(letter).reason().contains(reasonContains.get()))
                    .toList();
            List<GetResponse> staying = new ArrayList<>(look.taken);
            staying.removeAll(chosen);
            // The others first: one sent back and parked again at once lands behind them, as it would have.
            look.writeBack(staying);
            // The retry exchange is a fanout bound to the queue: it routes every copy, or (unbound) none.
            boolean routed = look.publish(retryExchange, "", chosen, DeadLetterRedelivery::withoutDeadLetterHeaders);
            if (!routed) {
                look.writeBack(chosen);
            }
            look.done();
            return routed ? chosen : null;
        });
        // Said after the look, not from inside it: a look that fails loses its connection, and closing a channel
        // right after its acks would hand back what it had just acked.
        if (sentBack == null) {
            throw new IllegalStateException(retryExchange + " routes to no queue: is " + queue
                    + " bound to it? Nothing was sent back; the dead letters stay where they were");
        }
        List<String> sent = sentBack.stream()
                .map(letter -> Objects.requireNonNullElse(letter.getProps().getMessageId(), "(no message id)")).toList();
        sent.forEach(id -> Log.infof("Dead letter %s sent back to %s", id, queue));
        return sent;
    }

    private interface LookAction<T> {
        T apply(Look look) throws Exception;
    }

    /** One look on the kept channel; if it fails, the connection goes, handing back (unacked) what the look took. */
    private <T> T look(LookAction<T> action) throws Exception {
        try {
            return action.apply(new Look(channel()));
        } catch (Exception | Error e) {
            // Nothing taken may stay unacked on the kept channel: the next look's multiple ack would clear it too.
            discard();
            throw e;
        }
    }

    private Channel channel() throws IOException, TimeoutException {
        if (channel == null || !channel.isOpen()) {
            discard();
            connection = broker.factory().newConnection(consumer + "-dead-letters");
            channel = connection.createChannel();
            channel.confirmSelect();
            // The broker returns an unroutable mandatory message before it confirms it. Only this channel's
            // returns count: one of a channel discarded since cannot make a later look fail.
            Channel opened = channel;
            opened.addReturnListener(r -> {
                if (channel == opened) {
                    returned = true;
                }
            });
        }
        return channel;
    }

    /** Closes the looks' connection (at shutdown). */
    synchronized void discard() {
        Connection gone = connection;
        connection = null;
        channel = null;
        if (gone != null) {
            try {
                gone.abort(5_000);
            } catch (RuntimeException e) {
                Log.debugf(e, "Closing the dead-letter looks' connection");
            }
        }
    }

    /** One look at the queue on one channel: every dead letter taken unacked, acked once each has a confirmed copy. */
    private final class Look {

        private final Channel channel;
        private final List<GetResponse> taken = new ArrayList<>();

        Look(Channel channel) throws Exception {
            this.channel = channel;
            long waiting = channel.messageCount(deadLetterQueue);
            for (GetResponse letter; taken.size() < waiting
                    && (letter = channel.basicGet(deadLetterQueue, false)) != null; ) {
                taken.add(letter);
            }
        }

        /** Fresh copies to the tail of the dead-letter queue, in their order. */
        void writeBack(List<GetResponse> letters) throws Exception {
            // Through the dead-letter exchange (a fanout bound to that queue alone), which the service may write to;
            // the default exchange it may not (least privilege: GET /dead-letters answered 500, ACCESS_REFUSED).
            if (!publish(deadLetterExchange, "", letters, DeadLetterRedelivery::asFreshCopy)) {
                throw new IllegalStateException("the dead-letter queue " + deadLetterQueue + " took no copy (deleted meanwhile?):"
                        + " the dead letters go back to it unacked");
            }
        }

        /** @return whether every copy was routed; each is confirmed either way */
        boolean publish(String exchange, String routingKey, List<GetResponse> letters,
                        UnaryOperator<AMQP.BasicProperties> properties) throws Exception {
            if (letters.isEmpty()) {
                return true;
            }
            returned = false;
            for (GetResponse letter : letters) {
                channel.basicPublish(exchange, routingKey, true, properties.apply(letter.getProps()), letter.getBody());
            }
            channel.waitForConfirmsOrDie(CONFIRM_MILLIS);
            return !returned;
        }

        /** Every copy is confirmed: the dead letters taken are acked, all at once. */
        void done() throws Exception {
            if (!taken.isEmpty()) {
                channel.basicAck(taken.get(taken.size() - 1).getEnvelope().getDeliveryTag(), true);
            }
        }
    }

    private static DeadLetter describe(GetResponse letter) {
        Object reason = letter.getProps().getHeaders() == null ? null
                : letter.getProps().getHeaders().get(InboxHeaders.DEAD_LETTER_REASON);
        return new DeadLetter(letter.getProps().getMessageId(), letter.getProps().getType(),
                reason == null ? "(no reason: dead-lettered by the broker)" : reason.toString());
    }

    private static AMQP.BasicProperties asFreshCopy(AMQP.BasicProperties properties) {
        if (properties.getHeaders() == null || !properties.getHeaders().containsKey(DELIVERY_COUNT)) {
            return properties;
        }
        Map<String, Object> headers = new HashMap<>(properties.getHeaders());
        headers.remove(DELIVERY_COUNT);
        return properties.builder().headers(headers).build();
    }

    private static AMQP.BasicProperties withoutDeadLetterHeaders(AMQP.BasicProperties properties) {
        Map<String, Object> headers = new HashMap<>(properties.getHeaders() == null ? Map.of() : properties.getHeaders());
        DEAD_LETTER_HEADERS.forEach(headers::remove);
        return properties.builder().headers(headers).build();
    }
}
