package dev.outboxinbox.relay;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** What the relay is doing, for readiness and for the logs: one writer (the engine thread), many readers. */
@ApplicationScoped
public class RelayStatus {

    private final AtomicLong published = new AtomicLong();
    private final AtomicLong failedAttempts = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();
    private final AtomicLong recoveredEvents = new AtomicLong();
    private volatile String lastRecovery;
    private volatile boolean streaming;
    private volatile String problem = "starting";
    private final AtomicLong parked = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    /** The last events parked, newest last, for GET /parked: the broker's queue is not browsed (every look would count as a delivery). */
    private final Deque<ParkedEvent> recentlyParked = new ArrayDeque<>();
    private volatile String lastParked;
    private volatile Instant lastCommit;
    private volatile Instant publishedUpTo;

    void engineStarted() {
        streaming = true;
        problem = null;
    }

    void engineStopped(String reason) {
        streaming = false;
        problem = reason;
    }

    /** The commit time of the newest event published: rows committed after it are not published yet. */
    void publishedUpTo(Instant commitTime) {
        if (commitTime != null && (publishedUpTo == null || commitTime.isAfter(publishedUpTo))) {
            publishedUpTo = commitTime;
        }
    }

    public Instant publishedUpTo() {
        return publishedUpTo;
    }

    void batchCommitted(int messages, List<BatchConfirms.Returned> parkedNow) {
        published.addAndGet(messages - parkedNow.size());
        lastCommit = Instant.now();
        problem = null;
        recordParked(parkedNow);
    }

    void recordParked(List<BatchConfirms.Returned> parkedNow) {
        if (!parkedNow.isEmpty()) {
            parked.addAndGet(parkedNow.size());
            refused.addAndGet(parkedNow.stream().filter(BatchConfirms.Returned::refused).count());
            BatchConfirms.Returned last = parkedNow.get(parkedNow.size() - 1);
            lastParked = last.message() + ": " + last.reason() + " at " + Instant.now();
            synchronized (recentlyParked) {
                for (BatchConfirms.Returned one : parkedNow) {
                    recentlyParked.addLast(ParkedEvent.of(one));
                    if (recentlyParked.size() > RECENTLY_PARKED) {
                        recentlyParked.removeFirst();
                    }
                }
            }
        }
    }

    /**
     * What {@code POST /parked/republish} did: the events sent on are no longer listed as parked, those
     * still parked are listed with the reason of this attempt (not counted again).
     */
    void republished(Collection<String> sent, List<BatchConfirms.Returned> stillParked) {
        java.util.Set<String> handled = new java.util.HashSet<>(sent);
        stillParked.forEach(r -> handled.add(r.message().eventId()));
        synchronized (recentlyParked) {
            recentlyParked.removeIf(event -> handled.contains(event.eventId()));
            for (BatchConfirms.Returned one : stillParked) {
                recentlyParked.addLast(ParkedEvent.of(one));
                if (recentlyParked.size() > RECENTLY_PARKED) {
                    recentlyParked.removeFirst();
                }
            }
        }
    }

    /** How many of the last parked events {@code GET /parked} lists. */
    static final int RECENTLY_PARKED = 100;

    /** A parked event as {@code GET /parked} and {@code POST /parked/republish} show it. */
    public record ParkedEvent(String eventId, String exchange, String routingKey, String reason, String parkedAt) {
        static ParkedEvent of(BatchConfirms.Returned returned) {
            OutboundMessage message = returned.message();
            return new ParkedEvent(message.eventId(), message.exchange(), message.routingKey(), returned.reason(), Instant.now().toString());
        }
    }

    /** The last events parked since start (at most {@value #RECENTLY_PARKED}), newest last, less those sent on since. */
    public List<ParkedEvent> recentlyParked() {
        synchronized (recentlyParked) {
            return List.copyOf(recentlyParked);
        }
    }

    void recovered(long events, String reason) {
        recoveredEvents.addAndGet(events);
        lastRecovery = reason + ": " + events + " events republished from the outbox table at " + Instant.now();
    }

    void skipped(int records) {
        skipped.addAndGet(records);
    }

    void attemptFailed(PublishFailedException e) {
        failedAttempts.incrementAndGet();
        problem = e.getMessage();
    }

    public boolean healthy() {
        return streaming && problem == null;
    }

    public String problem() {
        return problem;
    }

    /** Events parked as unroutable since this relay started. */
    public long parked() {
        return parked.get();
    }

    /** Of those, events parked because the broker refused their exchange ({@link BrokerRefusal}). */
    public long refused() {
        return refused.get();
    }

    /** The last event parked, and why; null if none. */
    public String lastParked() {
        return lastParked;
    }

    public long published() {
        return published.get();
    }

    /** WAL records that were not outbox inserts, acknowledged without publishing. */
    public long skipped() {
        return skipped.get();
    }

    /** Events republished from the outbox table because the slot could not have held them; null if none. */
    public String lastRecovery() {
        return lastRecovery;
    }

    public long recoveredEvents() {
        return recoveredEvents.get();
    }

    public long failedAttempts() {
        return failedAttempts.get();
    }

    public Instant lastCommit() {
        return lastCommit;
    }
}
