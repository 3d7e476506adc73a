package dev.outboxinbox.relay;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The publisher confirms of one batch. A batch succeeds only if every message was acked, none was
 * nacked, none was returned as unroutable, and the channel stayed open until the last ack.
 * Returns arrive before the ack of the same message (RabbitMQ orders them on the channel), so a
 * returned message is always seen before its batch can complete.
 */
final class BatchConfirms {

    private final NavigableMap<Long, OutboundMessage> outstanding = new TreeMap<>();
    private final Semaphore window;
    private final List<String> nacked = new ArrayList<>();
    private final List<String> unroutable = new ArrayList<>();
    private String channelLost;

    BatchConfirms(int windowSize) {
        this.window = new Semaphore(windowSize);
    }

    /** Blocks while the window is full; a broker that stops confirming fails the batch instead of hanging it. */
    void reserve(Duration timeout) throws InterruptedException, PublishFailedException {
        if (!window.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new PublishFailedException("no publisher confirm within " + timeout + " (window full)", failures());
        }
        synchronized (this) {
            if (channelLost != null) {
                throw new PublishFailedException("channel lost: " + channelLost, failures());
            }
        }
    }

    synchronized void sent(long sequenceNumber, OutboundMessage message) {
        outstanding.put(sequenceNumber, message);
    }

    synchronized void confirmed(long sequenceNumber, boolean multiple, boolean ack) {
        NavigableMap<Long, OutboundMessage> done = multiple
                ? outstanding.headMap(sequenceNumber, true)
                : outstanding.subMap(sequenceNumber, true, sequenceNumber, true);
        if (!ack) {
            done.values().forEach(message -> nacked.add(message.toString()));
        }
        window.release(done.size());
        done.clear();
        notifyAll();
    }

    synchronized void returned(String messageId, String exchange, String routingKey, String replyText) {
        unroutable.add("event " + messageId + " (exchange " + exchange + ", routing key " + routingKey + "): " + replyText);
    }

    synchronized void channelLost(String reason) {
        channelLost = reason;
        window.release(Integer.MAX_VALUE / 2);
        notifyAll();
    }

    /** Waits for the last confirm, then says whether the whole batch is safe to commit. */
    synchronized void awaitAll(Duration timeout) throws InterruptedException, PublishFailedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!outstanding.isEmpty() && channelLost == null) {
            long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remaining <= 0) {
                throw new PublishFailedException(outstanding.size() + " messages unconfirmed after " + timeout, failures());
            }
            wait(remaining);
        }
        if (channelLost != null) {
            throw new PublishFailedException("channel lost before every confirm arrived: " + channelLost, failures());
        }
        if (!unroutable.isEmpty()) {
            throw new PublishFailedException(unroutable.size() + " unroutable: " + unroutable.get(0), failures());
        }
        if (!nacked.isEmpty()) {
            throw new PublishFailedException(nacked.size() + " nacked by the broker, first " + nacked.get(0), failures());
        }
    }

    private List<String> failures() {
        return List.copyOf(unroutable);
    }
}
