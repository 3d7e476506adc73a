package dev.outboxinbox.inbox;

import io.quarkus.logging.Log;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.subscription.MultiEmitter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.Metadata;

/**
 * The inbox as a SmallRye Reactive Messaging channel: each message that passed the door becomes a
 * {@link Message} whose payload is what the {@link MessageDecoder} made and whose metadata is its
 * {@link InboxMetadata}; the {@code @Incoming @Inbox} method applies it, and SmallRye acks (the
 * method returned: its transaction committed) or nacks (it threw: everything rolled back).
 *
 * <p>A nack is judged as the batcher judges a failed batch, one message at a time, and the message
 * stays in hand meanwhile (unacked at the broker, so it spends nothing of the queue's delivery limit):
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
 * <p>One message at a time: the next is offered to the method only once the one before it is settled
 * (applied, a duplicate, or parked). A failed message is offered again <b>in place</b>, ahead of every
 * message behind it, so the order in which a partition's messages arrived is the order in which they
 * take effect. (Offering it again behind the later ones, as this class once did, let a later event of
 * an order take effect before an earlier one whose transaction had failed once.)
 *
 * <p>The queue between the transport and SmallRye is unbounded: what bounds it is the consumer's
 * prefetch (unacked messages per connection). A bounded one failing on overflow is how the stock
 * RabbitMQ connector lost its consumer after a broker restart (smallrye-reactive-messaging#1906).
 */
public final class ChannelSink implements InboxSink {

    private final BatchHandler inbox;
    private final InboxMetrics metrics;
    private final String consumer;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final ScheduledExecutorService retries =
            Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "inbox-channel-retries"));
    private volatile MultiEmitter<? super Message<?>> emitter;
    private volatile String problem;
    private volatile Instant outageSince;
    /** Messages behind the one in hand, in the order they arrived. Guarded by {@code this}. */
    private final Deque<Delivery> waiting = new ArrayDeque<>();
    /** The one message offered to the method and not settled yet. Guarded by {@code this}. */
    private Delivery current;

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

    ChannelSink(BatchHandler inbox, InboxMetrics metrics, String consumer, Duration initialBackoff, Duration maxBackoff) {
        this.inbox = inbox;
        this.metrics = metrics;
        this.consumer = consumer;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
    }

    /**
     * For the connector: one inbox channel, its messages kept under its consumer name, counted in its
     * consumer's metrics, retried at the service's pace ({@code inbox.initial-backoff}, {@code inbox.max-backoff}).
     */
    public static ChannelSink of(InboxHandler inbox, InboxMetrics metrics, ChannelSettings channel, InboxConfig config) {
        return new ChannelSink(inbox, metrics.consumer(channel.consumer()), channel.consumer(), config.initialBackoff(),
                config.maxBackoff());
    }

    /**
     * The channel's stream. {@code onSubscribe} runs once SmallRye subscribed (the connector starts
     * consuming then: nothing is taken from the broker before there is someone to apply it).
     */
    public Multi<Message<?>> messages(Runnable onSubscribe) {
        return Multi.createFrom().emitter(e -> {
            emitter = e;
            onSubscribe.run();
        });
    }

    @Override
    public CompletableFuture<Outcome> submit(InboxMessage<?> message) {
        Delivery delivery = new Delivery(message);
        synchronized (this) {
            waiting.add(delivery);
        }
        next();
        return delivery.outcome;
    }

    /** Offers the next message if none is in hand. */
    private void next() {
        Delivery next;
        synchronized (this) {
            if (current != null || waiting.isEmpty()) {
                return;
            }
            current = waiting.poll();
            next = current;
        }
        offer(next);
    }

    /** The message in hand is settled: its outcome goes to the transport, and the one behind it is offered. */
    private void settle(Delivery delivery, Outcome outcome) {
        synchronized (this) {
            if (current == delivery) {
                current = null;
            }
        }
        delivery.outcome.complete(outcome);
        next();
    }

    /** Every message in hand or waiting goes back to the transport (to be requeued): nobody applies them. */
    private void handBackAll(String reason) {
        List<Delivery> all = new ArrayList<>();
        synchronized (this) {
            if (current != null) {
                all.add(current);
                current = null;
            }
            all.addAll(waiting);
            waiting.clear();
        }
        all.forEach(d -> d.outcome.complete(new Outcome.Transient(reason)));
    }

    @Override
    public String problem() {
        return problem;
    }

    @Override
    public boolean outage() {
        return outageSince != null;
    }

    /** Stops the pending retries; their messages are still unacked, and the broker redelivers them. */
    public void close() {
        retries.shutdownNow();
    }

    private void offer(Delivery delivery) {
        MultiEmitter<? super Message<?>> downstream = emitter;
        if (downstream == null || downstream.isCancelled()) {
            handBackAll("the channel is not consumed (the service is stopping)");
            return;
        }
        InboxMetadata metadata = new InboxMetadata(consumer, delivery.message.messageId(), delivery.message.type(),
                delivery.message.traceparent());
        Message<?> message = Message.of(delivery.message.payload(), Metadata.of(metadata))
                .withAck(() -> applied(delivery, metadata))
                .withNack(failure -> failed(delivery, failure));
        downstream.emit(message);
    }

    private CompletionStage<Void> applied(Delivery delivery, InboxMetadata metadata) {
        Outcome outcome = metadata.outcome();
        if (problem != null) {
            Instant since = outageSince;
            Log.infof("Applying messages again%s", since == null ? ""
                    : " after an outage of " + Duration.between(since, Instant.now()).toSeconds() + " s");
            problem = null;
            outageSince = null;
        }
        metrics.batchCommitted(List.of(outcome));
        settle(delivery, outcome);
        return CompletableFuture.completedFuture(null);
    }

    private CompletionStage<Void> failed(Delivery delivery, Throwable failure) {
        // The probe is JDBC and may wait on a dead database: not on SmallRye's thread.
        try {
            retries.execute(() -> judge(delivery, failure));
        } catch (RejectedExecutionException stopping) {
            handBackAll("consumer stopping");
        }
        return CompletableFuture.completedFuture(null);
    }

    private void judge(Delivery delivery, Throwable failure) {
        RejectedMessageException rejected = rejection(failure);
        if (rejected != null) {
            settle(delivery, new Outcome.Poison(rejected.reason()));
            return;
        }
        metrics.transientFailure();
        String reason = InboxBatcher.rootMessage(failure);
        if (DatabaseErrors.blocked(failure)) {
            // A fence ended the wait on a row another transaction holds: nobody's fault, in place.
            Log.warnf("Message %s is blocked (%s); offering it again, nothing behind it goes first", delivery.message.messageId(), reason);
            later(delivery, InboxBatcher.backoff(delivery.blockedAttempts++, initialBackoff, maxBackoff));
            return;
        }
        if (InboxBatcher.isTransient(failure) && delivery.transientFailures < InboxBatcher.RETRIES_BEFORE_PROBING) {
            Log.warnf("Message %s failed (%s); offering it again", delivery.message.messageId(), reason);
            later(delivery, InboxBatcher.backoff(delivery.transientFailures++, initialBackoff, maxBackoff));
            return;
        }
        String probeFailure = probe();
        if (probeFailure == null) {
            if (++delivery.failuresWhileProbePassed >= 2) {
                Log.errorf("Message %s is poison: %s", delivery.message.messageId(), reason);
                settle(delivery, new Outcome.Poison(InboxBatcher.POISON + reason));
            } else {
                // Once is not proof: an outage may have ended between the failure and the probe.
                offer(delivery);
            }
            return;
        }
        delivery.failuresWhileProbePassed = 0;
        if (outageSince == null) {
            outageSince = Instant.now();
            Log.errorf("Outage: the database refuses every write (%s; a probe write: %s); holding the message,"
                    + " none is parked, retrying until it passes", reason, probeFailure);
        }
        problem = "outage since " + outageSince + ": the database refuses writes (" + probeFailure + ")";
        later(delivery, InboxBatcher.backoff(delivery.outageAttempts++, initialBackoff, maxBackoff));
    }

    private void later(Delivery delivery, Duration pause) {
        try {
            retries.schedule(() -> offer(delivery), pause.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException stopping) {
            handBackAll("consumer stopping");
        }
    }

    private String probe() {
        try {
            inbox.probe();
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
