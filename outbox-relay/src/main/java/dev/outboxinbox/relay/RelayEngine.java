package dev.outboxinbox.relay;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.quarkus.logging.Log;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Runs the Debezium engine and keeps it running: whenever it stops on an error (database down,
 * broker down past the batch's attempts, a slot that cannot be read) it is started again after a
 * growing pause, from the last committed offset. It runs only while this instance leads
 * ({@link RelayLeadership}): a standby waits here, and a leader that loses its lock closes the engine
 * and waits again. On shutdown the engine is closed so that the batch in hand is finished and
 * committed before the process exits, and the lock is released after it.
 *
 * <p>A stepped-down engine is stopped for sure: leadership is checked again before the engine starts
 * and before every batch is published; closing is retried while Debezium refuses it (it throws while
 * its tasks start); and an engine that does not stop within {@code relay.fencing.stop-timeout} ends the
 * process, which must not stream on as a non-leader.
 */
@ApplicationScoped
public class RelayEngine {

    private final RelayConfig config;
    private final OutboxBatchHandler handler;
    private final ConfirmingPublisher publisher;
    private final SlotRecovery recovery;
    private final RelayStatus status;
    private final RelayLeadership leadership;
    private final HeldAggregates held;
    private final Backoff backoff;
    private final ExecutorService supervisor = Executors.newSingleThreadExecutor(r -> new Thread(r, "relay-engine"));
    private final AtomicReference<DebeziumEngine<RecordChangeEvent<SourceRecord>>> engine = new AtomicReference<>();
    private volatile boolean stopping;

    RelayEngine(RelayConfig config, OutboxBatchHandler handler, ConfirmingPublisher publisher, SlotRecovery recovery,
                RelayStatus status, RelayLeadership leadership, HeldAggregates held) {
        this.config = config;
        this.held = held;
        this.leadership = leadership;
        this.handler = handler;
        this.publisher = publisher;
        this.recovery = recovery;
        this.status = status;
        this.backoff = new Backoff(config.publishing().initialBackoff(), config.publishing().maxBackoff());
    }

    /** Exit status of a process that could not stop its engine after stepping down. */
    static final int CANNOT_STOP = 70;

    void onStart(@Observes StartupEvent event) {
        leadership.onLost(this::stopSteppedDownEngine);
        supervisor.submit(this::superviseEngine);
    }

    void onStop(@Observes ShutdownEvent event) throws InterruptedException {
        stopping = true;
        handler.drain(Duration.ofSeconds(30));
        closeEngine();
        supervisor.shutdownNow();
        if (!supervisor.awaitTermination(30, TimeUnit.SECONDS)) {
            Log.warn("Engine thread still running after 30 s");
        }
        leadership.release();
        publisher.discard();
        Log.infof("Relay stopped after publishing %d events", status.published());
    }

    /** On shutdown: stops publishing, within the stop timeout, then lets the shutdown go on whatever happened. */
    private void closeEngine() {
        if (!stopEngine(config.fencing().stopTimeout())) {
            Log.errorf("The engine did not stop within %s of the shutdown", config.fencing().stopTimeout());
        }
    }

    /**
     * The moment this instance stops leading: the engine is stopped for sure, or the process ends. A
     * relay that streams on as a non-leader would publish next to the new leader and hold the slot.
     */
    private void stopSteppedDownEngine() {
        long started = System.nanoTime();
        if (stopEngine(config.fencing().stopTimeout())) {
            Log.infof("Deposed: stopped streaming (the engine stopped in %d ms)", (System.nanoTime() - started) / 1_000_000);
            return;
        }
        Log.errorf("Deposed, and the engine did not stop within %s (relay.fencing.stop-timeout): exiting with status %d"
                + " rather than stream on as a non-leader", config.fencing().stopTimeout(), CANNOT_STOP);
        Runtime.getRuntime().halt(CANNOT_STOP);
    }

    /**
     * Closes the running engine and waits until its run has returned. Debezium refuses to close while its
     * tasks start ({@code IllegalStateException}): asked again every 100 ms. True once no engine runs.
     */
    private boolean stopEngine(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            DebeziumEngine<?> running = engine.get();
            if (running == null) {
                return true;
            }
            try {
                running.close();
            } catch (IllegalStateException starting) {
                // tasks still starting (ask again), or already stopping (wait below)
                Log.debugf("Engine close: %s", starting.getMessage());
            } catch (IOException e) {
                Log.error("Engine did not close cleanly; the last batch will be republished on restart", e);
            }
            long pollUntil = Math.min(deadline, System.nanoTime() + 100_000_000L);
            while (engine.get() == running && System.nanoTime() < pollUntil) {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return engine.get() != running;
                }
            }
            if (engine.get() != running) {
                return true;
            }
            if (System.nanoTime() >= deadline) {
                return false;
            }
        }
    }

    private void superviseEngine() {
        int restarts = 0;
        while (!stopping) {
            try {
                leadership.awaitLeadership(() -> stopping);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // Never let the supervisor die quietly: a relay without it would never lead again.
                status.engineStopped("leadership: " + e);
                Log.errorf(e, "Asking for leadership failed; asking again in %s", config.leadership().heartbeat());
                try {
                    Backoff.sleep(config.leadership().heartbeat());
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
                continue;
            }
            if (stopping) {
                return;
            }
            long committedBefore = status.published();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            // Another instance may have held or released aggregates while this one did not lead.
            held.forget();
            try {
                recovery.ensureSlotAndRecover();
                leadership.requireLeading(); // deposed during the recovery: no engine
                runEngine(failure);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                failure.set(e);
            }
            if (stopping) {
                return;
            }
            if (!leadership.isLeader()) {
                status.engineStopped("standby: stepped down (" + leadership.lastStepDown() + ")");
                restarts = 0;
                continue;
            }
            Throwable cause = failure.get();
            if (cause != null) {
                try {
                    recovery.dropSlotOlderThanItsPublication(cause);
                } catch (Exception e) {
                    Log.warnf("Could not check the slot against its publication: %s", e.toString());
                }
            }
            String reason = cause == null ? "engine stopped" : rootMessage(cause);
            status.engineStopped(reason);
            restarts = status.published() > committedBefore ? 1 : restarts + 1;
            var delay = backoff.delay(restarts);
            Log.errorf(cause, "Relay engine stopped (%s); restarting from the last committed offset in %s", reason, delay);
            try {
                Backoff.sleep(delay);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void runEngine(AtomicReference<Throwable> failure) {
        DebeziumEngine<RecordChangeEvent<SourceRecord>> current = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(DebeziumProperties.of(config, leadership.term()))
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        status.engineStarted();
                        Log.infof("Streaming outbox inserts from slot %s", config.source().slot());
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        failure.set(error != null ? error : new IllegalStateException(message));
                    }
                })
                .notifying(new DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>>() {
                    @Override
                    public void handleBatch(List<RecordChangeEvent<SourceRecord>> records,
                                            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
                            throws InterruptedException {
                        // Before a single message of the batch is published: a deposed leader publishes nothing more.
                        leadership.requireLeading();
                        handler.handleBatch(records, committer);
                    }
                })
                .build();
        engine.set(current);
        try {
            // Set before this check: a step-down after it finds the engine and closes it.
            leadership.requireLeading();
            current.run();
        } catch (RuntimeException e) {
            failure.set(e);
        } finally {
            engine.set(null);
        }
    }

    private static String rootMessage(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == t ? String.valueOf(t.getMessage()) : t.getMessage() + " (cause: " + root.getMessage() + ")";
    }
}
