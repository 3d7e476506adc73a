package dev.outboxinbox.relay;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The publisher confirms of one batch. A batch is confirmed only if every message was acked, none
 * was nacked, and the channel stayed open until the last ack. A message the broker returned as
 * unroutable is acked too, so it is reported beside the confirmation, for the caller to park.
 * Returns arrive before the ack of the same message (RabbitMQ orders them on the channel), so a
 * returned message is always known before its batch can complete.
 */
final class BatchConfirms {

    /** A message the broker could route to no queue, and what it said. */
    record Returned(OutboundMessage message, String reason) {
    }

    private final NavigableMap<Long, OutboundMessage> outstanding = new TreeMap<>();
    private final Semaphore window;
    private final List<String> nacked = new ArrayList<>();
    private final List<Returned> returned = new ArrayList<>();
    private String channelLost;

    BatchConfirms(int windowSize) {
        this.window = new Semaphore(windowSize);
    }

    /** Blocks while the window is full; a broker that stops confirming fails the batch instead of hanging it. */
    void reserve(Duration timeout) throws InterruptedException, PublishFailedException {
        if (!window.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new PublishFailedException("no publisher confirm within " + timeout + " (window full)");
        }
        synchronized (this) {
            if (channelLost != null) {
                throw new PublishFailedException("channel lost: " + channelLost);
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

    synchronized void returned(String messageId, String replyText) {
        outstanding.values().stream().filter(m -> m.eventId().equals(messageId)).findFirst()
                .ifPresent(message -> returned.add(new Returned(message, replyText)));
    }

    synchronized void channelLost(String reason) {
        channelLost = reason;
        window.release(Integer.MAX_VALUE / 2);
        notifyAll();
    }

    /**
     * Waits for the last confirm.
     * @return the messages the broker returned as unroutable (acked, but in no queue)
     * @throws PublishFailedException if any message was nacked, or not confirmed in time, or the channel died
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
        if (channelLost != null) {
            throw new PublishFailedException("channel lost before every confirm arrived: " + channelLost);
        }
        if (!nacked.isEmpty()) {
            throw new PublishFailedException(nacked.size() + " nacked by the broker, first " + nacked.get(0));
        }
        return List.copyOf(returned);
    }
}
