package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Group commit: messages that arrive together are applied in one transaction (one fsync instead
 * of one per message), each message's future completing only after that commit.
 *
 * <p>When a batch fails, the question is whose fault it is, and the database answers it: a
 * {@linkplain BatchHandler#probe() probe} does the same writes and rolls back.
 * <ul>
 *   <li>The probe fails too: it is an <b>outage</b> (database down, read-only after a failover, a
 *       revoked grant, a full disk). No message is at fault, so none is parked and none is handed
 *       back: the batch is retried with a growing pause, for as long as it takes, while readiness
 *       says why. Its messages stay unacked in hand, so the broker neither redelivers them nor
 *       counts them toward the queue's delivery limit.</li>
 *   <li>The probe passes, and the batch fails again right after: the batch itself is at fault. It
 *       is split in halves until the message that causes it stands alone and is parked as poison;
 *       the others are applied. (Twice, because an outage can end between a batch and its probe.)</li>
 * </ul>
 * A deadlock or a serialization failure is retried a few times first: those pass on their own.
 * A batch ended by one of the inbox's fences ({@code inbox.lock-timeout}: it waited on a row another
 * transaction holds; {@code inbox.idle-in-transaction-timeout}) is retried in place with a growing
 * pause, neither probed nor parked: no message is at fault, and the transaction holding the row ends
 * (it commits, or PostgreSQL ends it when its owner froze) — see {@link DatabaseErrors#blocked}.
 *
 * <p>{@code inbox.unsafe.apply-out-of-order} (chaos profile only, {@link DeduplicationGuard}) gathers
 * messages for {@value #GATHER_MILLIS} ms and applies each batch in reverse: the negative control of
 * the promise of order, which deploy/chaos's verifier must catch.
 */
@ApplicationScoped
public class InboxBatcher implements InboxSink {

    /** How long the unsafe out-of-order switch gathers a batch before applying it in reverse. */
    static final long GATHER_MILLIS = 500;
    /** Retries of a transient failure (deadlock, serialization) before the probe is asked whose fault it is. */
    static final int RETRIES_BEFORE_PROBING = 3;
    /** The reason a message is dead-lettered under when it fails alone while the database takes other writes. */
    static final String POISON = "the message makes its transaction fail while the database takes other writes: ";

    private record Pending(InboxMessage<?> event, CompletableFuture<Outcome> outcome) {
    }

    private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private final BatchHandler handler;
    private final int maxBatchSize;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final InboxMetrics metrics;
    private final boolean outOfOrder;
    private volatile boolean running = true;
    private volatile String problem;
    private volatile boolean outage;
    private Thread worker;

    @Inject
    InboxBatcher(BatchHandler handler, InboxConfig config, InboxMetrics metrics) {
        // Counted under the service's consumer name: a BatchEffects service reads one stream.
        this(handler, config.maxBatchSize(), config.initialBackoff(), config.maxBackoff(), metrics.consumer(config.consumer()),
                config.unsafe().applyOutOfOrder());
    }

    InboxBatcher(BatchHandler handler, int maxBatchSize, Duration initialBackoff, Duration maxBackoff, InboxMetrics metrics) {
        this(handler, maxBatchSize, initialBackoff, maxBackoff, metrics, false);
    }

    /** @param outOfOrder the negative control of order: gathered batches applied in reverse (chaos profile only) */
    InboxBatcher(BatchHandler handler, int maxBatchSize, Duration initialBackoff, Duration maxBackoff, InboxMetrics metrics,
                 boolean outOfOrder) {
        this.outOfOrder = outOfOrder;
        this.handler = handler;
        this.maxBatchSize = maxBatchSize;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
        this.metrics = metrics;
    }

    void start(@Observes StartupEvent event) {
        worker = new Thread(this::run, "inbox-batcher");
        worker.start();
    }

    void stop(@Observes ShutdownEvent event) throws InterruptedException {
        running = false;
        worker.interrupt();
        worker.join(10_000);
        Log.infof("Inbox stopped: %d applied, %d duplicates, %d unchanged, %d poison, in %d transactions",
                metrics.applied(), metrics.duplicates(), metrics.unchanged(), metrics.poison(), metrics.batches());
    }

    @Override
    public CompletableFuture<Outcome> submit(InboxMessage<?> event) {
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        queue.add(new Pending(event, outcome));
        return outcome;
    }

    @Override
    public String problem() {
        return problem;
    }

    @Override
    public boolean outage() {
        return outage;
    }

    /** Whether the thread that applies messages is running; if not, nothing will ever be acked. */
    public boolean alive() {
        return worker != null && worker.isAlive();
    }

    private void run() {
        List<Pending> batch = new ArrayList<>(maxBatchSize);
        while (running) {
            try {
                Pending first = queue.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, maxBatchSize - 1);
                if (outOfOrder) {
                    gatherAndReverse(batch);
                }
                apply(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                batch.forEach(p -> p.outcome().complete(new Outcome.Transient("consumer stopping")));
                break;
            } catch (Throwable e) { // NOPMD: an Error here must not strand the batch unacked while the service looks healthy
                // A bug, not a message's fault: hand the batch back for redelivery rather than lose it or hold it forever.
                problem = "the last batch failed unexpectedly: " + e;
                Log.error("Inbox batch failed unexpectedly; its messages will be redelivered", e);
                batch.forEach(p -> p.outcome().complete(new Outcome.Transient(e.toString())));
            } finally {
                batch.clear();
            }
        }
        List<Pending> left = new ArrayList<>();
        queue.drainTo(left);
        left.forEach(p -> p.outcome().complete(new Outcome.Transient("consumer stopping")));
    }

    /**
     * UNSAFE, the negative control of order: waits up to {@value #GATHER_MILLIS} ms for more messages
     * (a partition's later events among them), then reverses the batch, so a later event of an order
     * takes effect before an earlier one. Without gathering, batches are too small to reorder anything.
     */
    private void gatherAndReverse(List<Pending> batch) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GATHER_MILLIS);
        while (batch.size() < maxBatchSize) {
            long left = deadline - System.nanoTime();
            Pending next = left > 0 ? queue.poll(left, TimeUnit.NANOSECONDS) : null;
            if (next == null) {
                break;
            }
            batch.add(next);
        }
        Collections.reverse(batch);
    }

    private void apply(List<Pending> batch) throws InterruptedException {
        Instant outageSince = null;
        Instant blockedSince = null;
        int blockedAttempts = 0;
        int failedWhileProbePassed = 0;
        for (int attempt = 0; ; attempt++) {
            RuntimeException failure;
            try {
                List<Outcome> outcomes = handler.handle(batch.stream().map(Pending::event).toList());
                // The state first, then the acks: whoever sees a message acked sees the service healthy.
                if (blockedSince != null) {
                    Log.infof("Batch of %d applied after waiting %d s on rows other transactions held",
                            batch.size(), Duration.between(blockedSince, Instant.now()).toSeconds());
                }
                if (outageSince != null || problem != null) {
                    Log.infof("Applying messages again%s", outageSince == null ? ""
                            : " after an outage of " + Duration.between(outageSince, Instant.now()).toSeconds() + " s");
                }
                problem = null;
                outage = false;
                metrics.batchCommitted(outcomes);
                for (int i = 0; i < batch.size(); i++) {
                    batch.get(i).outcome().complete(outcomes.get(i));
                }
                return;
            } catch (RuntimeException e) {
                failure = e;
            }
            metrics.transientFailure();
            String reason = rootMessage(failure);
            if (DatabaseErrors.blocked(failure)) {
                // A fence ended the wait (a row held by another transaction, maybe a frozen owner's, until
                // PostgreSQL ends that one too): no message is at fault and the database works. In place.
                if (blockedSince == null) {
                    blockedSince = Instant.now();
                }
                Log.warnf("Batch of %d is blocked (%s); retrying it in place, nothing is parked or handed back",
                        batch.size(), reason);
                problem = "blocked since " + blockedSince + " on rows another transaction holds: " + reason;
                attempt--;
                Thread.sleep(backoff(blockedAttempts++).toMillis());
                continue;
            }
            if (isTransient(failure) && attempt < RETRIES_BEFORE_PROBING) {
                Log.warnf("Batch of %d failed (%s); retrying", batch.size(), reason);
            } else {
                String probeFailure = probe();
                if (probeFailure == null && ++failedWhileProbePassed >= 2) {
                    isolate(batch, reason);
                    return;
                }
                if (probeFailure == null) {
                    // Once is not proof: an outage may have ended between the batch and the probe. Again, at once.
                    continue;
                }
                failedWhileProbePassed = 0;
                outage = true;
                if (outageSince == null) {
                    outageSince = Instant.now();
                    Log.errorf("Outage: the database refuses every write (%s; a probe write: %s); holding %d messages,"
                            + " none is parked, retrying until it passes", reason, probeFailure, batch.size());
                }
                problem = "outage since " + outageSince + ": the database refuses writes (" + probeFailure + ")";
            }
            Thread.sleep(backoff(attempt).toMillis());
        }
    }

    /** The database works and this batch does not: split it until the message at fault stands alone. */
    private void isolate(List<Pending> batch, String reason) throws InterruptedException {
        if (batch.size() > 1) {
            int half = batch.size() / 2;
            Log.warnf("Batch of %d failed (%s) while the database takes writes; splitting it to isolate the message at fault",
                    batch.size(), reason);
            apply(new ArrayList<>(batch.subList(0, half)));
            apply(new ArrayList<>(batch.subList(half, batch.size())));
            return;
        }
        String poison = POISON + reason;
        Log.errorf("Message %s is poison: %s", batch.get(0).event().messageId(), poison);
        batch.get(0).outcome().complete(new Outcome.Poison(poison));
    }

    /** @return null if the database takes a write like this service's right now; else why not */
    private String probe() {
        try {
            handler.probe();
            return null;
        } catch (RuntimeException e) {
            return rootMessage(e);
        }
    }

    private Duration backoff(int attempt) {
        return backoff(attempt, initialBackoff, maxBackoff);
    }

    static Duration backoff(int attempt, Duration initialBackoff, Duration maxBackoff) {
        Duration next = initialBackoff.multipliedBy(1L << Math.min(attempt, 16));
        return next.compareTo(maxBackoff) > 0 ? maxBackoff : next;
    }

    /** @see DatabaseErrors#isTransient */
    static boolean isTransient(Throwable e) {
        return DatabaseErrors.isTransient(e);
    }

    static String rootMessage(Throwable e) {
        return DatabaseErrors.rootMessage(e);
    }
}
