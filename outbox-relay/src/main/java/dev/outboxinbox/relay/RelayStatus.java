package dev.outboxinbox.relay;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
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
            BatchConfirms.Returned last = parkedNow.get(parkedNow.size() - 1);
            lastParked = last.message() + ": " + last.reason() + " at " + Instant.now();
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
