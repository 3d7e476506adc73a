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
    private volatile List<String> unroutable = List.of();
    private volatile Instant lastCommit;

    void engineStarted() {
        streaming = true;
        problem = null;
    }

    void engineStopped(String reason) {
        streaming = false;
        problem = reason;
    }

    void batchCommitted(int messages) {
        published.addAndGet(messages);
        lastCommit = Instant.now();
        problem = null;
        unroutable = List.of();
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
        unroutable = e.unroutable();
    }

    public boolean healthy() {
        return streaming && problem == null;
    }

    public String problem() {
        return problem;
    }

    public List<String> unroutable() {
        return unroutable;
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
