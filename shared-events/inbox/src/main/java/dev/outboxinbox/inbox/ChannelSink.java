package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.subscription.MultiEmitter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.Metadata;

/**
 * The inbox as a SmallRye Reactive Messaging channel, with group commit underneath: the
 * {@code @Incoming @Inbox} method is called once per new message, as if it had a transaction of its
 * own, but the messages that arrived together share one. On this channel's thread, for up to
 * {@code inbox.max-batch-size} messages in the order they arrived:
 * <ol>
 *   <li>begin a transaction, set its fences, claim every message id in one INSERT
 *       ({@link ChannelTransaction});</li>
 *   <li>a copy (its key was there) is not offered to the method at all: a duplicate;</li>
 *   <li>each new message becomes a {@link Message} whose payload is what the {@link MessageDecoder}
 *       made and whose metadata is its {@link InboxMetadata}, handed to SmallRye one after the other;
 *       SmallRye calls the method on this same thread ({@code @NonBlocking}, which {@link InboxMethods}
 *       requires: no worker pool, no hand-off), each call joining the transaction ({@link Inbox}) and
 *       leaving it before the message is acked and the next one called;</li>
 *   <li>once every call returned, commit once, and only then hand each message's outcome to the
 *       transport, which acks.</li>
 * </ol>
 * What a method sees that it would not in a transaction of its own: the uncommitted writes of the
 * messages before it in the batch, locks held until the batch commits, the service's transaction
 * timeout ({@code quarkus.transaction-manager.default-transaction-timeout}) for the whole batch, and
 * being called again for a message whose batch rolled back because another message failed.
 *
 * <p><b>One message that throws is judged alone.</b> The method threw (nacked): the transaction is
 * rolled back, so nothing of the batch took effect. The messages before the failed one are applied
 * again as a batch, the failed one alone, in a transaction of its own, and the ones behind it wait
 * their turn. A batch that fails without a message to blame (the claim, the bean's look ahead
 * ({@link InboxLookahead}) or the commit failed: a constraint checked at commit, Hibernate's flush, the
 * database gone) is applied again one message a transaction. Alone, a failed message is judged as the batcher judges a failed batch, and stays in
 * hand meanwhile (unacked at the broker, so it spends nothing of the queue's delivery limit):
 * <ul>
 *   <li>{@link RejectedMessageException}: the business says it can never apply it: dead-lettered at once;</li>
 *   <li>a deadlock or serialization failure: offered to the method again after a pause, a few times;</li>
 *   <li>then the probe (the inbox row of a made-up message, rolled back) asks whose fault it is. It
 *       fails too: an <b>outage</b>, the message is offered again with a growing pause for as long as
 *       it lasts, and {@link #problem()} says so (readiness). It passes: offered once more at once; if
 *       it fails again while the probe passes, the message is at fault and is dead-lettered with the reason.</li>
 * </ul>
 * A lock timeout or an ended idle session ({@link DatabaseErrors#blocked}) is offered again with a
 * growing pause for as long as it happens, never probed, never parked.
 *
 * <p>A failed message is offered again <b>in place</b>, ahead of every message behind it, so the
 * order in which a partition's messages arrived is the order in which they take effect. (Offering it
 * again behind the later ones, as this class once did, let a later event of an order take effect
 * before an earlier one whose transaction had failed once.) Whatever the method did for a message
 * whose batch rolled back, it does again when the message is offered again: its effect belongs in the
 * transaction, like the inbox row's.
 *
 * <p>The queue between the transport and this thread is unbounded: what bounds it is the consumer's
 * prefetch (unacked messages per connection). A bounded one failing on overflow is how the stock
 * RabbitMQ connector lost its consumer after a broker restart (smallrye-reactive-messaging#1906).
 */
public final class ChannelSink implements InboxSink {

    private final ChannelTransaction.Opener inbox;
    /** The method's bean's look at a batch before its calls ({@link InboxLookahead}); null if it has none. */
    private final InboxLookahead<Object> lookahead;
    private final InboxMetrics metrics;
    private final String consumer;
    private final int maxBatchSize;
    private final boolean deduplicate;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    /** Messages not offered yet, in the order they arrived. */
    private final LinkedBlockingQueue<Delivery> waiting = new LinkedBlockingQueue<>();
    private volatile boolean running = true;
    private final AtomicBoolean started = new AtomicBoolean();
    private volatile Thread worker;
    private volatile MultiEmitter<? super Message<?>> emitter;
    private volatile String problem;
    private volatile Instant outageSince;

    /** How long a stopping channel waits for the calls it handed to SmallRye before rolling their transaction back. */
    private static final long STOP_WAIT_MILLIS = 5_000;

    /** One message in hand, over its attempts. */
    private static final class Delivery {
        final InboxMessage<?> message;
        final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        int transientFailures;
        int failuresWhileProbePassed;
        int outageAttempts;
        int blockedAttempts;

        Delivery(InboxMessage<?> message) {
            this.message = message;
        }
    }

    /**
     * One try at a batch: its outcomes, committed; or the failure, everything rolled back, with the
     * index of the message whose method threw ({@code -1}: no message to blame).
     */
    private record Attempt(List<Outcome> outcomes, int failedAt, Throwable failure) {

        static Attempt committed(List<Outcome> outcomes) {
            return new Attempt(outcomes, -1, null);
        }

        static Attempt failed(int at, Throwable failure) {
            return new Attempt(null, at, failure);
        }
    }

    ChannelSink(ChannelTransaction.Opener inbox, InboxLookahead<?> lookahead, InboxMetrics metrics, String consumer, int maxBatchSize,
                boolean deduplicate, Duration initialBackoff, Duration maxBackoff) {
        this.inbox = inbox;
        @SuppressWarnings("unchecked") // the channel's payloads are what its decoder makes, the type the bean reads
        InboxLookahead<Object> look = (InboxLookahead<Object>) lookahead;
        this.lookahead = look;
        this.metrics = metrics;
        this.consumer = consumer;
        this.maxBatchSize = maxBatchSize;
        this.deduplicate = deduplicate;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
    }

    /**
     * For the connector: one inbox channel, its messages kept under its consumer name, counted in its
     * consumer's metrics, up to {@code inbox.max-batch-size} a transaction, retried at the service's
     * pace ({@code inbox.initial-backoff}, {@code inbox.max-backoff}); {@code lookahead} is the method's
     * bean if it is an {@link InboxLookahead}, else null.
     */
    public static ChannelSink of(InboxHandler inbox, InboxLookahead<?> lookahead, InboxMetrics metrics, ChannelSettings channel,
                                 InboxConfig config) {
        return new ChannelSink(inbox, lookahead, metrics.consumer(channel.consumer()), channel.consumer(), config.maxBatchSize(),
                inbox.deduplicates(), config.initialBackoff(), config.maxBackoff());
    }

    /**
     * The channel's stream. {@code onSubscribe} runs once SmallRye subscribed (the connector starts
     * consuming then: nothing is taken from the broker before there is someone to apply it).
     */
    public Multi<Message<?>> messages(Runnable onSubscribe) {
        return Multi.createFrom().emitter(e -> {
            if (!started.compareAndSet(false, true)) {
                e.fail(new IllegalStateException("the inbox channel of " + consumer + " has a subscriber already"));
                return;
            }
            emitter = e;
            Thread thread = new Thread(this::run, "inbox-channel-" + consumer);
            thread.setDaemon(true);
            worker = thread;
            thread.start();
            onSubscribe.run();
        });
    }

    @Override
    public CompletableFuture<Outcome> submit(InboxMessage<?> message) {
        Delivery delivery = new Delivery(message);
        waiting.add(delivery);
        if (!running) {
            // The channel's thread is gone (or going): nobody would ever take it from the queue.
            handBackWaiting();
        }
        return delivery.outcome;
    }

    @Override
    public String problem() {
        return problem;
    }

    @Override
    public boolean outage() {
        return outageSince != null;
    }

    /**
     * Stops the channel's thread: a batch in its transaction is rolled back, and every message in hand or
     * waiting goes back to the transport (still unacked: the broker redelivers them).
     */
    public void close() {
        running = false;
        Thread thread = worker;
        if (thread != null) {
            thread.interrupt();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        handBackWaiting();
    }

    private void run() {
        List<Delivery> batch = new ArrayList<>(maxBatchSize);
        try {
            applyUntilStopped(batch);
        } finally {
            // From here every message submitted is handed back at once (submit reads the flag after queueing it).
            running = false;
            handBackWaiting();
        }
    }

    private void applyUntilStopped(List<Delivery> batch) {
        while (running) {
            try {
                Delivery first = waiting.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                waiting.drainTo(batch, maxBatchSize - 1);
                apply(batch);
            } catch (InterruptedException e) {
                handBack(batch, "consumer stopping"); // those not settled yet; a settled one keeps its outcome
                if (running) {
                    problem = "not applying messages: " + e.getMessage();
                    Log.errorf("Inbox channel of %s stopped applying messages: %s; they go back to the queue", consumer,
                            e.getMessage());
                }
                break;
            } catch (Throwable e) { // NOPMD: an Error here must not strand the batch unacked while the service looks healthy
                // A bug, not a message's fault: hand the batch back for redelivery rather than lose it or hold it forever.
                problem = "the last batch failed unexpectedly: " + e;
                Log.error("Inbox channel batch failed unexpectedly; its messages will be redelivered", e);
                handBack(batch, e.toString());
            } finally {
                batch.clear();
            }
        }
    }

    /** Applies {@code batch} (in arrival order), judging alone whatever fails; returns once each is settled. */
    private void apply(List<Delivery> batch) throws InterruptedException {
        if (batch.size() == 1) {
            applyAlone(batch.get(0), null);
            return;
        }
        Attempt attempt = attempt(batch);
        if (attempt.failure() == null) {
            settled(batch, attempt.outcomes());
            return;
        }
        int at = attempt.failedAt();
        if (at < 0) {
            metrics.transientFailure();
            Log.warnf("Batch of %d failed (%s); applying its messages one a transaction", batch.size(),
                    InboxBatcher.rootMessage(attempt.failure()));
            for (Delivery delivery : batch) {
                applyAlone(delivery, null);
            }
            return;
        }
        // Everything rolled back: the ones before the failed message again together, then the failed one
        // alone (judged with the failure it had), then the ones behind it.
        if (at > 0) {
            apply(new ArrayList<>(batch.subList(0, at)));
        }
        applyAlone(batch.get(at), attempt.failure());
        if (at + 1 < batch.size()) {
            apply(new ArrayList<>(batch.subList(at + 1, batch.size())));
        }
    }

    /** One message a transaction until it is settled: applied, a duplicate, or parked. */
    private void applyAlone(Delivery delivery, Throwable failure) throws InterruptedException {
        Throwable last = failure;
        while (true) {
            if (!running) {
                throw new InterruptedException("the channel is stopping");
            }
            if (last != null) {
                Duration pause = judge(delivery, last);
                if (pause == null) {
                    return; // parked
                }
                if (!pause.isZero()) {
                    Thread.sleep(pause.toMillis());
                }
            }
            Attempt attempt = attempt(List.of(delivery));
            if (attempt.failure() == null) {
                settled(List.of(delivery), attempt.outcomes());
                return;
            }
            last = attempt.failure();
        }
    }

    private Attempt attempt(List<Delivery> batch) throws InterruptedException {
        ChannelTransaction transaction;
        try {
            transaction = inbox.begin(consumer, batch.stream().<InboxMessage<?>>map(d -> d.message).toList());
        } catch (RuntimeException e) {
            return Attempt.failed(-1, e);
        }
        List<Offered> offered = new ArrayList<>(batch.size());
        boolean committed = false;
        try {
            Outcome[] outcomes = new Outcome[batch.size()];
            List<Integer> toOffer = new ArrayList<>(batch.size());
            boolean[] fresh = new boolean[batch.size()];
            for (int i = 0; i < batch.size(); i++) {
                fresh[i] = transaction.claimed(batch.get(i).message.messageId());
                if (!fresh[i] && deduplicate) {
                    outcomes[i] = new Outcome.Duplicate(); // not offered: the method never sees a copy
                    continue;
                }
                toOffer.add(i);
            }
            Throwable look = lookAhead(transaction, toOffer.stream().<Object>map(i -> batch.get(i).message.payload()).toList());
            if (look != null) {
                return Attempt.failed(-1, look);
            }
            // Every new message is handed to SmallRye in turn; it calls the method for one after the other on
            // this thread (@NonBlocking, as InboxMethods requires), each call joining the transaction in turn.
            for (int i : toOffer) {
                InboxMessage<?> message = batch.get(i).message;
                InboxMetadata metadata = new InboxMetadata(consumer, message.messageId(), message.type(), message.traceparent(),
                        transaction);
                metadata.claimed(fresh[i]);
                offered.add(new Offered(i, metadata, offer(message, metadata, transaction)));
            }
            for (Offered one : offered) {
                Throwable thrown = returned(one.returned());
                if (thrown != null) {
                    // The calls behind it skip the method (abandoned), and have returned before the rollback.
                    awaitAll(offered);
                    return Attempt.failed(one.index(), thrown);
                }
            }
            for (Offered one : offered) {
                if (!one.metadata().wasJoined()) {
                    // InboxConsumers refuses such a method at start; this is the last fence before a commit.
                    throw new IllegalStateException("the method reading the inbox channel of " + consumer + " returned for message "
                            + one.metadata().messageId() + " without joining its transaction: it needs @Inbox");
                }
            }
            try {
                transaction.commit();
                committed = true;
            } catch (RuntimeException e) {
                return Attempt.failed(-1, e);
            }
            for (Offered one : offered) {
                outcomes[one.index()] = one.metadata().outcome();
            }
            return Attempt.committed(List.of(outcomes));
        } catch (InterruptedException | RuntimeException | Error stopping) {
            // Stopping, or a bug: no call of this batch may still be inside the transaction when it rolls back.
            transaction.abandon();
            awaitAllUninterruptibly(offered);
            throw stopping;
        } finally {
            if (!committed) {
                transaction.rollback();
            }
        }
    }

    /**
     * The bean's look at the messages about to be offered, in the transaction, on this thread; null if
     * it has none or it passed, else its failure (the batch fails with no message to blame).
     */
    private Throwable lookAhead(ChannelTransaction transaction, List<Object> payloads) {
        if (lookahead == null || payloads.isEmpty()) {
            return null;
        }
        boolean joined = false;
        try {
            // Joining fails too if the transaction ended under it (its timeout): judged like the look's own failure.
            joined = transaction.join();
            if (!joined) {
                return new IllegalStateException("the batch was abandoned before its look ahead");
            }
            lookahead.lookahead(payloads);
            return null;
        } catch (RuntimeException | LinkageError e) {
            return e;
        } finally {
            if (joined) {
                transaction.leave();
            }
        }
    }

    /** Waits until every call handed over has returned (an abandoned batch's calls return at once). */
    private void awaitAll(List<Offered> offered) throws InterruptedException {
        for (Offered one : offered) {
            returned(one.returned());
        }
    }

    /** As {@link #awaitAll}, for a stopping channel: {@value #STOP_WAIT_MILLIS} ms at most, through interrupts. */
    private static void awaitAllUninterruptibly(List<Offered> offered) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_WAIT_MILLIS);
        boolean interrupted = false;
        for (Offered one : offered) {
            while (!one.returned().isDone() && System.nanoTime() < deadline) {
                try {
                    one.returned().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | TimeoutException e) {
                    break;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** A message handed to the method: where it is in its batch, its metadata, and its call's end (null: returned). */
    private record Offered(int index, InboxMetadata metadata, CompletableFuture<Throwable> returned) {
    }

    /**
     * Hands one message to SmallRye for the method; the future completes when the method returned
     * (null) or threw (its failure; the rest of the batch is abandoned at once, before the next call).
     *
     * @throws InterruptedException nobody consumes the channel any more (the service is stopping)
     */
    private CompletableFuture<Throwable> offer(InboxMessage<?> delivered, InboxMetadata metadata, ChannelTransaction transaction)
            throws InterruptedException {
        MultiEmitter<? super Message<?>> downstream = emitter;
        if (downstream == null || downstream.isCancelled()) {
            throw new InterruptedException("the channel is not consumed (the service is stopping)");
        }
        CompletableFuture<Throwable> returned = new CompletableFuture<>();
        Message<?> message = Message.of(delivered.payload(), Metadata.of(metadata))
                .withAck(() -> {
                    returned.complete(null);
                    return CompletableFuture.completedFuture(null);
                })
                .withNack(failure -> {
                    transaction.abandon();
                    returned.complete(failure != null ? failure : new IllegalStateException("nacked without a reason"));
                    return CompletableFuture.completedFuture(null);
                });
        downstream.emit(message);
        return returned;
    }

    /** Waits until the method returned (null) or threw (its failure). */
    private Throwable returned(CompletableFuture<Throwable> returned) throws InterruptedException {
        while (true) {
            try {
                return returned.get(1, TimeUnit.SECONDS);
            } catch (TimeoutException stillRunning) {
                MultiEmitter<? super Message<?>> downstream = emitter;
                if (downstream == null || downstream.isCancelled()) {
                    throw new InterruptedException("the channel is not consumed any more (the service is stopping)");
                }
            } catch (ExecutionException impossible) {
                return impossible.getCause();
            }
        }
    }

    /** Committed: the state first, then the outcomes (whoever sees a message acked sees the service healthy). */
    private void settled(List<Delivery> batch, List<Outcome> outcomes) {
        if (problem != null) {
            Instant since = outageSince;
            Log.infof("Applying messages again%s", since == null ? ""
                    : " after an outage of " + Duration.between(since, Instant.now()).toSeconds() + " s");
            problem = null;
            outageSince = null;
        }
        metrics.batchCommitted(outcomes);
        for (int i = 0; i < batch.size(); i++) {
            batch.get(i).outcome.complete(outcomes.get(i));
        }
    }

    /** @return how long to wait before offering the message again; null once it is parked */
    private Duration judge(Delivery delivery, Throwable failure) {
        RejectedMessageException rejected = rejection(failure);
        if (rejected != null) {
            delivery.outcome.complete(new Outcome.Poison(rejected.reason()));
            return null;
        }
        metrics.transientFailure();
        String reason = InboxBatcher.rootMessage(failure);
        if (DatabaseErrors.blocked(failure)) {
            // A fence ended the wait on a row another transaction holds: nobody's fault, in place.
            Log.warnf("Message %s is blocked (%s); offering it again, nothing behind it goes first", delivery.message.messageId(), reason);
            return InboxBatcher.backoff(delivery.blockedAttempts++, initialBackoff, maxBackoff);
        }
        if (InboxBatcher.isTransient(failure) && delivery.transientFailures < InboxBatcher.RETRIES_BEFORE_PROBING) {
            Log.warnf("Message %s failed (%s); offering it again", delivery.message.messageId(), reason);
            return InboxBatcher.backoff(delivery.transientFailures++, initialBackoff, maxBackoff);
        }
        String probeFailure = probe();
        if (probeFailure == null) {
            if (++delivery.failuresWhileProbePassed >= 2) {
                Log.errorf("Message %s is poison: %s", delivery.message.messageId(), reason);
                delivery.outcome.complete(new Outcome.Poison(InboxBatcher.POISON + reason));
                return null;
            }
            // Once is not proof: an outage may have ended between the failure and the probe.
            return Duration.ZERO;
        }
        delivery.failuresWhileProbePassed = 0;
        if (outageSince == null) {
            outageSince = Instant.now();
            Log.errorf("Outage: the database refuses every write (%s; a probe write: %s); holding the message,"
                    + " none is parked, retrying until it passes", reason, probeFailure);
        }
        problem = "outage since " + outageSince + ": the database refuses writes (" + probeFailure + ")";
        return InboxBatcher.backoff(delivery.outageAttempts++, initialBackoff, maxBackoff);
    }

    /** Messages nobody will apply go back to the transport (requeued); those settled already keep their outcome. */
    private static void handBack(List<Delivery> deliveries, String reason) {
        deliveries.forEach(d -> d.outcome.complete(new Outcome.Transient(reason)));
    }

    private void handBackWaiting() {
        List<Delivery> left = new ArrayList<>();
        waiting.drainTo(left);
        handBack(left, "consumer stopping");
    }

    private String probe() {
        try {
            inbox.probe(consumer);
            return null;
        } catch (RuntimeException e) {
            return InboxBatcher.rootMessage(e);
        }
    }

    private static RejectedMessageException rejection(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RejectedMessageException rejected) {
                return rejected;
            }
        }
        return null;
    }
}
