package dev.outboxinbox.inventory.inbox;

import dev.outboxinbox.inventory.InventoryConfig;
import io.quarkus.logging.Log;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.sql.SQLException;
import java.time.Duration;
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
 * <p>A batch that fails for a transient reason (database down, deadlock, serialization failure)
 * is retried whole with a growing pause; past the budget its messages are handed back for
 * redelivery. A batch that fails for any other reason is split in halves until the message that
 * causes it stands alone and is parked as poison: it never takes good messages down with it.
 */
@ApplicationScoped
public class InboxBatcher {

    private record Pending(ReceivedEvent event, CompletableFuture<Outcome> outcome) {
    }

    private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private final InboxHandler handler;
    private final InventoryConfig.Processing config;
    private final InboxMetrics metrics;
    private volatile boolean running = true;
    private Thread worker;

    InboxBatcher(InboxHandler handler, InventoryConfig config, InboxMetrics metrics) {
        this.handler = handler;
        this.config = config.processing();
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

    /** @return the message's outcome, completed after its transaction committed (or failed for good) */
    public CompletableFuture<Outcome> submit(ReceivedEvent event) {
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        queue.add(new Pending(event, outcome));
        return outcome;
    }

    private void run() {
        List<Pending> batch = new ArrayList<>(config.maxBatchSize());
        while (running) {
            try {
                Pending first = queue.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, config.maxBatchSize() - 1);
                apply(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (RuntimeException e) {
                // A bug, not a message's fault: hand the batch back for redelivery rather than lose it.
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
        for (int attempt = 0; ; attempt++) {
            try {
                List<Outcome> outcomes = handler.handle(batch.stream().map(Pending::event).toList());
                for (int i = 0; i < batch.size(); i++) {
                    batch.get(i).outcome().complete(outcomes.get(i));
                }
                metrics.batchCommitted(outcomes);
                return;
            } catch (RuntimeException e) {
                if (isTransient(e)) {
                    metrics.transientFailure();
                    if (attempt + 1 >= config.transientAttempts()) {
                        Log.errorf("Batch of %d failed %d times for a transient reason; handing it back for redelivery: %s",
                                batch.size(), attempt + 1, rootMessage(e));
                        batch.forEach(p -> p.outcome().complete(new Outcome.Transient(rootMessage(e))));
                        return;
                    }
                    Duration pause = backoff(attempt);
                    Log.warnf("Batch of %d failed (%s); retrying in %s", batch.size(), rootMessage(e), pause);
                    Thread.sleep(pause.toMillis());
                } else if (batch.size() > 1) {
                    int half = batch.size() / 2;
                    Log.warnf("Batch of %d failed (%s); splitting it to isolate the message at fault", batch.size(), rootMessage(e));
                    apply(new ArrayList<>(batch.subList(0, half)));
                    apply(new ArrayList<>(batch.subList(half, batch.size())));
                    return;
                } else {
                    String reason = "the message makes its transaction fail: " + rootMessage(e);
                    Log.errorf("Message %s is poison: %s", batch.get(0).event().messageId(), reason);
                    batch.get(0).outcome().complete(new Outcome.Poison(reason));
                    return;
                }
            }
        }
    }

    private Duration backoff(int attempt) {
        Duration next = config.initialBackoff().multipliedBy(1L << Math.min(attempt, 16));
        return next.compareTo(config.maxBackoff()) > 0 ? config.maxBackoff() : next;
    }

    /**
     * Transient: the database could not be reached or said "try again" (SQLSTATE class 08
     * connection, 40 transaction rollback such as deadlock or serialization failure, 53 resources,
     * 57 operator intervention such as a restart). Everything else is about the data.
     */
    static boolean isTransient(Throwable e) {
        SQLException sql = firstSqlException(e, 0);
        if (sql == null) {
            // Not the database at all: a bug, which retrying will not fix; splitting isolates the message.
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

    private static String rootMessage(Throwable e) {
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
