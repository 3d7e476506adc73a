package dev.outboxinbox.inbox;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Counts what the inbox did, for logs, tests and {@code /q/metrics}:
 * {@code inbox_messages_total{consumer="…",outcome="applied|duplicate|unchanged|poison|held"}},
 * {@code inbox_transient_failures_total} (failed batch attempts), {@code inbox_requeued_total},
 * {@code inbox_batches_total}, and {@code inbox_commit_to_applied_seconds} (from the producer's
 * commit to this consumer's, for every message applied, with p50/p95/p99 and histogram buckets),
 * each tagged with the consumer's name: one set per inbox channel ({@link #consumer(String)}).
 * The bean itself is the service's total over its channels, what a test reads; it registers no meter.
 * Counters live as long as the process; the inbox table is the durable record.
 */
@ApplicationScoped
public class InboxMetrics {

    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong unchanged = new AtomicLong();
    private final AtomicLong poison = new AtomicLong();
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong transientFailures = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong requeued = new AtomicLong();
    private final AtomicLong nearDeliveryLimit = new AtomicLong();
    private final Timer commitToApplied;
    private final MeterRegistry registry;
    /** The service's total this consumer's counts go to as well; null for the total itself. */
    private final InboxMetrics total;
    private final Map<String, InboxMetrics> consumers = new ConcurrentHashMap<>();

    /** The service's total over its consumers. */
    @Inject
    InboxMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.total = null;
        this.commitToApplied = null;
    }

    /** One consumer's, on its own (a unit test's). */
    InboxMetrics(MeterRegistry registry, String consumer) {
        this(registry, consumer, null);
    }

    private InboxMetrics(MeterRegistry registry, String consumer, InboxMetrics total) {
        this.registry = registry;
        this.total = total;
        messages(registry, consumer, "applied", applied);
        messages(registry, consumer, "duplicate", duplicates);
        messages(registry, consumer, "unchanged", unchanged);
        messages(registry, consumer, "poison", poison);
        messages(registry, consumer, "held", held);
        FunctionCounter.builder("inbox.transient.failures", transientFailures, AtomicLong::get).tag("consumer", consumer)
                .description("Batch attempts that failed and were retried (a deadlock, an outage) or split").register(registry);
        FunctionCounter.builder("inbox.requeued", requeued, AtomicLong::get).tag("consumer", consumer)
                .description("Messages handed back to the broker (nack with requeue): each spends one of the queue's"
                        + " delivery limit on RabbitMQ 3.x, so this stays at zero unless the service stops or fails")
                .register(registry);
        FunctionCounter.builder("inbox.deliveries.near.limit", nearDeliveryLimit, AtomicLong::get).tag("consumer", consumer)
                .description("Deliveries whose x-delivery-count is within 2 of the queue's delivery limit: a message"
                        + " returned that often (crash loops, handovers) that the broker will soon dead-letter on its own")
                .register(registry);
        FunctionCounter.builder("inbox.batches", batches, AtomicLong::get).tag("consumer", consumer)
                .description("Inbox transactions committed").register(registry);
        commitToApplied = Timer.builder("inbox.commit.to.applied").tag("consumer", consumer)
                .description("From the commit of the producer's transaction (the event's committed-at header) to the"
                        + " commit of this consumer's inbox transaction, for each message applied (not for duplicates)")
                .publishPercentiles(0.5, 0.95, 0.99)
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
    }

    /** The meters of one consumer (an inbox channel), tagged with its name; counted in this total too. */
    public InboxMetrics consumer(String consumer) {
        if (total != null) {
            throw new IllegalStateException("a consumer's metrics have no consumers of their own");
        }
        return consumers.computeIfAbsent(consumer, name -> new InboxMetrics(registry, name, this));
    }

    /** A message was applied and its transaction committed; the producer committed {@code committedAt}. */
    public void appliedAfterCommit(Instant committedAt) {
        if (commitToApplied != null) {
            commitToApplied.record(Duration.between(committedAt, Instant.now()).abs());
        }
    }

    private static void messages(MeterRegistry registry, String consumer, String outcome, AtomicLong count) {
        FunctionCounter.builder("inbox.messages", count, AtomicLong::get).tag("consumer", consumer).tag("outcome", outcome)
                .description("Messages by outcome: applied, duplicate (already in the inbox: acked without effect),"
                        + " unchanged (new, but its effect was already had under another message id),"
                        + " poison (dead-lettered with a reason), held (a newer version than this instance reads: its"
                        + " queue paused behind it until an upgraded instance takes the queue)")
                .register(registry);
    }

    void batchCommitted(List<Outcome> outcomes) {
        count(metrics -> metrics.batches);
        for (Outcome outcome : outcomes) {
            if (outcome instanceof Outcome.Applied) {
                count(metrics -> metrics.applied);
            } else if (outcome instanceof Outcome.Duplicate) {
                count(metrics -> metrics.duplicates);
            } else if (outcome instanceof Outcome.Unchanged) {
                count(metrics -> metrics.unchanged);
            }
        }
    }

    /** One more of {@code counter}, in this consumer's meters and in the service's total. */
    private void count(Function<InboxMetrics, AtomicLong> counter) {
        counter.apply(this).incrementAndGet();
        if (total != null) {
            counter.apply(total).incrementAndGet();
        }
    }

    public void poisoned() {
        count(metrics -> metrics.poison);
    }

    public void held() {
        count(metrics -> metrics.held);
    }

    public long heldCount() {
        return held.get();
    }

    public void requeued() {
        count(metrics -> metrics.requeued);
    }

    void nearDeliveryLimit() {
        count(metrics -> metrics.nearDeliveryLimit);
    }

    public long nearDeliveryLimitCount() {
        return nearDeliveryLimit.get();
    }

    void transientFailure() {
        count(metrics -> metrics.transientFailures);
    }

    public long applied() {
        return applied.get();
    }

    public long duplicates() {
        return duplicates.get();
    }

    public long unchanged() {
        return unchanged.get();
    }

    public long poison() {
        return poison.get();
    }

    public long transientFailures() {
        return transientFailures.get();
    }

    public long requeuedCount() {
        return requeued.get();
    }

    public long batches() {
        return batches.get();
    }
}
