package dev.outboxinbox.relay;

import com.rabbitmq.client.ShutdownSignalException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The publisher confirms of one batch on one channel. A batch is confirmed only if every message was
 * acked, none was nacked, and the channel stayed open until the last ack. A message the broker
 * returned as unroutable is acked too, so it is reported beside the confirmation, for the caller to
 * park. Returns arrive before the ack of the same message (RabbitMQ orders them on the channel), so a
 * returned message is always known before its batch can complete. Only the listeners of the channel
 * it was sent on report to it (see {@code ConfirmingPublisher.ConfirmChannel}).
 */
final class BatchConfirms {

    /**
     * A message the broker did not take into a queue, and what it said: returned as unroutable, or
     * {@code refused} (its exchange may not be declared or written, see {@link BrokerRefusal}).
     */
    record Returned(OutboundMessage message, String reason, boolean refused) {
        Returned(OutboundMessage message, String reason) {
            this(message, reason, false);
        }
    }

    private final NavigableMap<Long, OutboundMessage> outstanding = new TreeMap<>();
    private final Set<OutboundMessage> acked = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Semaphore window;
    private final List<String> nacked = new ArrayList<>();
    private final List<Returned> returned = new ArrayList<>();
    private ShutdownSignalException channelLost;
    /** Messages of the batch were never sent (the channel was gone): the batch can't be taken as confirmed. */
    private boolean unsent;

    BatchConfirms(int windowSize) {
        this.window = new Semaphore(windowSize);
    }

    /**
     * Blocks while the window is full; a broker that stops confirming fails the batch instead of hanging it.
     * False once the channel is gone (the broker refused an earlier message of the batch, say): stop sending,
     * and {@link #awaitAll} says why, so that a refusal is handled as one, however many messages followed it.
     */
    boolean reserve(Duration timeout) throws InterruptedException, PublishFailedException {
        if (!window.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new PublishFailedException("no publisher confirm within " + timeout + " (window full)");
        }
        synchronized (this) {
            if (channelLost != null) {
                unsent = true;
                return false;
            }
            return true;
        }
    }

    synchronized void sent(long sequenceNumber, OutboundMessage message) {
        outstanding.put(sequenceNumber, message);
    }

    synchronized void confirmed(long sequenceNumber, boolean multiple, boolean ack) {
        NavigableMap<Long, OutboundMessage> done = multiple
                ? outstanding.headMap(sequenceNumber, true)
                : outstanding.subMap(sequenceNumber, true, sequenceNumber, true);
        if (ack) {
            acked.addAll(done.values());
        } else {
            done.values().forEach(message -> nacked.add(message.toString()));
        }
        window.release(done.size());
        done.clear();
        notifyAll();
    }

    synchronized void returned(String messageId, String replyText) {
        outstanding.values().stream().filter(m -> java.util.Objects.equals(m.eventId(), messageId)).findFirst()
                .ifPresent(message -> returned.add(new Returned(message, replyText)));
    }

    synchronized void channelLost(ShutdownSignalException cause) {
        if (channelLost == null) {
            channelLost = cause;
        }
        window.release(Integer.MAX_VALUE / 2);
        notifyAll();
    }

    /** Whether the broker acked this message (it is in a queue, or was returned and is in {@link #returnedSoFar()}). */
    synchronized boolean acked(OutboundMessage message) {
        return acked.contains(message);
    }

    synchronized List<Returned> returnedSoFar() {
        return List.copyOf(returned);
    }

    /**
     * Waits for the last confirm.
     * @return the messages the broker returned as unroutable (acked, but in no queue)
     * @throws PublishFailedException if any message was nacked, or not confirmed in time, or the channel
     *         died (with the {@link BrokerRefusal} if the broker closed it for one exchange)
     */
    synchronized List<Returned> awaitAll(Duration timeout) throws InterruptedException, PublishFailedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!outstanding.isEmpty() && channelLost == null) {
            long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remaining <= 0) {
                throw new PublishFailedException(outstanding.size() + " messages unconfirmed after " + timeout);
            }
            wait(remaining);
        }
        if (channelLost != null && (!outstanding.isEmpty() || unsent)) {
            throw lost("channel lost before every confirm arrived");
        }
        if (!nacked.isEmpty()) {
            throw new PublishFailedException(nacked.size() + " nacked by the broker, first " + nacked.get(0));
        }
        return List.copyOf(returned);
    }

    private PublishFailedException lost(String what) {
        BrokerRefusal refusal = BrokerRefusal.of(channelLost);
        return refusal != null ? new PublishFailedException(what, refusal)
                : new PublishFailedException(what + ": " + channelLost.getMessage());
    }
}
