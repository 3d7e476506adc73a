package dev.outboxinbox.inventory.inbox;

import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** Counts what the inbox did, for logs, tests and (later) a metrics endpoint. */
@ApplicationScoped
public class InboxMetrics {

    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong poison = new AtomicLong();
    private final AtomicLong transientFailures = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();

    void batchCommitted(List<Outcome> outcomes) {
        batches.incrementAndGet();
        for (Outcome outcome : outcomes) {
            if (outcome instanceof Outcome.Applied) {
                applied.incrementAndGet();
            } else if (outcome instanceof Outcome.Duplicate) {
                duplicates.incrementAndGet();
            }
        }
    }

    public void poisoned() {
        poison.incrementAndGet();
    }

    void transientFailure() {
        transientFailures.incrementAndGet();
    }

    public long applied() {
        return applied.get();
    }

    public long duplicates() {
        return duplicates.get();
    }

    public long poison() {
        return poison.get();
    }

    public long transientFailures() {
        return transientFailures.get();
    }

    public long batches() {
        return batches.get();
    }
}
