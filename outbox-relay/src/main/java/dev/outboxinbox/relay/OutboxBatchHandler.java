package dev.outboxinbox.relay;

import dev.outboxinbox.events.MessageHeaders;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The heart of the relay: a batch of outbox inserts, already shaped by the outbox event router,
 * is published and confirmed whole before a single record of it is marked processed. Debezium
 * commits offsets (and PostgreSQL's slot moves) only past processed records, so whatever dies
 * between the publish and the commit, the batch is read again and republished: duplicates are
 * possible, gaps are not. Consumers deduplicate by {@code message_id}.
 */
@ApplicationScoped
class OutboxBatchHandler implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {

    static final String HEARTBEAT_TOPIC_PREFIX = "__debezium-heartbeat";

    private final ConfirmingPublisher publisher;
    private final RelayStatus status;
    private final RelayMetrics metrics;
    private final RelayTracing tracing;
    private final Backoff backoff;
    private final int attempts;
    /** Held for the whole of a batch: publish, confirm, mark, commit. */
    private final ReentrantLock inFlight = new ReentrantLock();
    private volatile boolean draining;

    OutboxBatchHandler(ConfirmingPublisher publisher, RelayStatus status, RelayMetrics metrics, RelayTracing tracing,
                       RelayConfig config) {
        this.publisher = publisher;
        this.status = status;
        this.metrics = metrics;
        this.tracing = tracing;
        this.backoff = new Backoff(config.publishing().initialBackoff(), config.publishing().maxBackoff());
        this.attempts = config.publishing().attempts();
    }

    @Override
    public void handleBatch(List<RecordChangeEvent<SourceRecord>> records,
                            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        inFlight.lockInterruptibly();
        try {
            if (draining) {
                // Not a single message of it was published: the next start reads it again, no duplicate.
                throw new InterruptedException("relay is stopping; this batch is left for the next start");
            }
            publishAndCommit(records, committer);
        } finally {
            inFlight.unlock();
        }
    }

    /**
     * For a graceful stop: lets the batch in hand be published, confirmed and committed, and stops
     * any further batch from starting. Debezium's own close interrupts the batch in hand, which
     * would leave it published but uncommitted and so republished on the next start. A batch that a
     * broker alarm blocks is not waited for: its publish is aborted, and it is republished on the next start.
     */
    void drain(Duration timeout) throws InterruptedException {
        draining = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean aborted = false;
        while (!inFlight.tryLock(100, TimeUnit.MILLISECONDS)) {
            String blocked = publisher.blocked();
            if (blocked != null && !aborted) {
                // The alarm may last longer than any stop may take: the batch is left uncommitted, for the next start.
                Log.warnf("Stopping while the broker blocks publishing (%s): the batch in hand is abandoned uncommitted"
                        + " and will be published again on the next start", blocked);
                publisher.abortPublishing();
                aborted = true;
            }
            if (System.nanoTime() - deadline > 0) {
                Log.warnf("The batch in hand did not finish within %s; it will be republished on the next start", timeout);
                return;
            }
        }
        inFlight.unlock();
    }

    private void publishAndCommit(List<RecordChangeEvent<SourceRecord>> records,
                                  DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        Instant handed = Instant.now();
        List<OutboundMessage> routed = new ArrayList<>(records.size());
        List<RelayMetrics.Stamps> stamps = new ArrayList<>(records.size());
        String skipped = null;
        int skips = 0;
        for (RecordChangeEvent<SourceRecord> event : records) {
            SourceRecord record = event.record();
            if (OutboundMessage.isRouted(record)) {
                OutboundMessage message = OutboundMessage.fromOrParked(record);
                routed.add(message);
                // Timed only with both stamps of its own: without the commit time's header, committedAt() is the read time.
                if (!message.malformed() && record.timestamp() != null
                        && record.headers().lastWithName(MessageHeaders.COMMITTED_AT) != null) {
                    stamps.add(new RelayMetrics.Stamps(message.committedAt(), Instant.ofEpochMilli(record.timestamp())));
                }
            } else if (!record.topic().startsWith(HEARTBEAT_TOPIC_PREFIX)) {
                skipped = record.topic();
                skips++;
            }
        }
        if (skips > 0) {
            // Marked processed below with the rest: the slot moves past them.
            Log.infof("Skipped %d WAL record(s) that are not outbox inserts (last on %s)", skips, skipped);
            status.skipped(skips);
        }
        RelayTracing.Batch traced = tracing.publishing(routed);
        List<OutboundMessage> messages = traced.messages();
        List<BatchConfirms.Returned> parked;
        try {
            parked = new ArrayList<>(publishWholeBatch(messages, traced));
        } catch (RuntimeException | InterruptedException notConfirmed) {
            traced.failed(notConfirmed);
            throw notConfirmed;
        }
        traced.confirmed(parked);
        metrics.eventsConfirmed(stamps, handed);
        for (RecordChangeEvent<SourceRecord> event : records) {
            committer.markProcessed(event);
        }
        committer.markBatchFinished();
        messages.stream().filter(OutboundMessage::malformed).forEach(m -> parked.add(new BatchConfirms.Returned(m,
                String.valueOf(m.properties().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)))));
        status.batchCommitted(messages.size(), parked);
        messages.stream().filter(m -> !m.malformed()).map(OutboundMessage::committedAt).max(Instant::compareTo)
                .ifPresent(status::publishedUpTo);
    }

    /**
     * Retries the whole batch with growing pauses. An event no queue is bound for does not fail the
     * batch: it is parked (confirmed) with its reason, and the batch is committed past it. When the
     * attempts run out the batch is still not committed: the exception stops the engine, and
     * {@link RelayEngine} restarts it from the last committed offset, so the same events come back.
     * Nothing is ever skipped.
     */
    private List<BatchConfirms.Returned> publishWholeBatch(List<OutboundMessage> messages, RelayTracing.Batch traced)
            throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            if (draining && attempt > 1) {
                throw new InterruptedException("relay is stopping; the batch is left uncommitted for the next start");
            }
            try {
                long started = System.nanoTime();
                List<BatchConfirms.Returned> parked = publisher.publish(messages);
                if (!messages.isEmpty()) {
                    metrics.batchConfirmed(Duration.ofNanos(System.nanoTime() - started), messages.size());
                }
                if (attempt > 1) {
                    Log.infof("Batch of %d published on attempt %d", messages.size(), attempt);
                }
                return parked;
            } catch (PublishFailedException e) {
                status.attemptFailed(e);
                traced.attemptFailed(e);
                if (draining) {
                    throw new InterruptedException("relay is stopping; the batch is left uncommitted for the next start ("
                            + e.getMessage() + ")");
                }
                if (attempt >= attempts) {
                    throw new IllegalStateException("Batch of " + messages.size() + " not confirmed after "
                            + attempt + " attempts; restarting from the last committed offset. Last failure: "
                            + e.getMessage(), e);
                }
                Log.warnf("Batch of %d not confirmed (attempt %d of %d): %s", messages.size(), attempt, attempts, e.getMessage());
                Backoff.sleep(backoff.delay(attempt - 1));
            }
        }
    }
}
