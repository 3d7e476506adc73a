package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
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
 */
@ApplicationScoped
public class InboxBatcher implements InboxSink {

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
    private volatile boolean running = true;
    private volatile String problem;
    private Thread worker;

    @Inject
    InboxBatcher(BatchHandler handler, InboxConfig config, InboxMetrics metrics) {
        this(handler, config.maxBatchSize(), config.initialBackoff(), config.maxBackoff(), metrics);
    }

    InboxBatcher(BatchHandler handler, int maxBatchSize, Duration initialBackoff, Duration maxBackoff, InboxMetrics metrics) {
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
        Log.infof("Inbox stopped: %d applied, %d duplicates, %d poison, in %d transactions",
                metrics.applied(), metrics.duplicates(), metrics.poison(), metrics.batches());
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

    private void apply(List<Pending> batch) throws InterruptedException {
        Instant outageSince = null;
        int failedWhileProbePassed = 0;
        for (int attempt = 0; ; attempt++) {
            RuntimeException failure;
            try {
                List<Outcome> outcomes = handler.handle(batch.stream().map(Pending::event).toList());
                // The state first, then the acks: whoever sees a message acked sees the service healthy.
                if (outageSince != null || problem != null) {
                    Log.infof("Applying messages again%s", outageSince == null ? ""
                            : " after an outage of " + Duration.between(outageSince, Instant.now()).toSeconds() + " s");
                }
                problem = null;
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

    /**
     * Transient: the database could not be reached or said "try again" (SQLSTATE class 08
     * connection, 40 transaction rollback such as deadlock or serialization failure, 53 resources,
     * 57 operator intervention such as a restart). Worth a retry before asking the probe.
     */
    static boolean isTransient(Throwable e) {
        SQLException sql = firstSqlException(e, 0);
        if (sql == null) {
            return false;
        }
        String state = sql.getSQLState();
        // No state: the pool could not hand out a connection.
        return state == null || state.startsWith("08") || state.startsWith("40")
                || state.startsWith("53") || state.startsWith("57");
    }

    /**
     * The database's own error, wherever it sits: a failure at commit reaches us as the transaction
     * manager's RollbackException with the SQLException among the suppressed, not the causes.
     */
    private static SQLException firstSqlException(Throwable t, int depth) {
        if (t == null || depth > 20) {
            return null;
        }
        if (t instanceof SQLException sql) {
            return sql;
        }
        for (Throwable suppressed : t.getSuppressed()) {
            SQLException found = firstSqlException(suppressed, depth + 1);
            if (found != null) {
                return found;
            }
        }
        return t.getCause() == t ? null : firstSqlException(t.getCause(), depth + 1);
    }

    static String rootMessage(Throwable e) {
        SQLException sql = firstSqlException(e, 0);
        if (sql != null && sql.getMessage() != null) {
            return sql.getMessage().lines().findFirst().orElse("") + " (SQLSTATE " + sql.getSQLState() + ")";
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() == null ? root.toString() : root.getMessage().lines().findFirst().orElse("");
    }
}
