package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Envelope;
import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.Classification;
import dev.outboxinbox.inbox.InboxHeaders;
import dev.outboxinbox.inbox.InboxMessage;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.InboxTracing;
import dev.outboxinbox.inbox.Outcome;
import io.opentelemetry.api.trace.Span;
import io.quarkus.logging.Log;
import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * What becomes of each delivery of one session; the only code that acks. The door's verdict
 * ({@link dev.outboxinbox.inbox.MessageClassifier}), then the inbox's outcome, settles each message
 * once: acked after its transaction committed (applied, a duplicate, unchanged); dead-lettered with
 * its reason, then acked (poison); held (a newer version than this instance reads); or handed back to
 * the queue (a transient failure). One thread acks and one dead-letters, so no channel is used from
 * two threads; a message taken in counts in flight until it is settled.
 */
final class Settlement {

    private final InboxConsumer consumer;
    private final ConsumerSession session;
    private final ChannelSettings settings;
    private final InboxMetrics metrics;
    private final Connection connection;
    private final DeadLetters deadLetters;
    private final ExecutorService acks;
    private final ExecutorService parking;
    /** Ends the hold of a message nobody upgraded took within hold-unreadable-for. */
    private final ScheduledExecutorService holds;

    Settlement(InboxConsumer consumer, ConsumerSession session, Connection connection) {
        this.consumer = consumer;
        this.session = session;
        this.settings = consumer.settings;
        this.metrics = consumer.metrics;
        this.connection = connection;
        this.deadLetters = new DeadLetters(connection, settings.deadLetterExchange(), settings.deadLetterQueue());
        // Named by channel: a thread dump or a log line says whose they are.
        this.acks = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-acks-" + settings.channel()));
        this.parking = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-dead-letters-" + settings.channel()));
        this.holds = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "inbox-holds-" + settings.channel());
            thread.setDaemon(true);
            return thread;
        });
    }

    void receive(Delivery delivery) {
        if (delivery.from.held != null) {
            // Behind a held message: not read, not settled; it goes back to the queue, in its place, with the channel.
            return;
        }
        consumer.inFlight.incrementAndGet();
        delivery.from.inFlight.incrementAndGet();
        AMQP.BasicProperties properties = delivery.properties;
        Classification classification = classify(delivery);
        Span span = Span.getInvalid();
        try {
            span = consumer.tracing.receiving(settings.queue(), settings.consumer(), properties.getMessageId(), properties.getHeaders());
            if (classification instanceof Classification.Held notYet) {
                InboxTracing.ended(span, "held", notYet.reason());
                hold(delivery, notYet.reason());
                return;
            }
            if (classification instanceof Classification.Rejected rejected) {
                InboxTracing.ended(span, "poison", rejected.reason());
                park(delivery, rejected.reason());
                return;
            }
            InboxMessage<?> message = ((Classification.Accepted) classification).message()
                    .withTraceparent(InboxTracing.traceparent(span));
            Span receiving = span;
            consumer.sink().submit(message).whenComplete((outcome, failure) -> settle(delivery, receiving, outcome, failure));
        } catch (RuntimeException | Error e) {
            // The door let it through: what failed is this process's part (tracing, the hand-over to the
            // inbox), not the message's. Back to the queue for another try.
            InboxTracing.ended(span, "requeued", e.toString());
            throw e;
        }
    }

    /**
     * The door's verdict. Whatever the decoder throws is about this message (it is a function of the
     * message alone), Errors included: a StackOverflowError on a deeply nested body, a
     * NoClassDefFoundError in its parser. Parked with that reason, where a person sees it and sends it
     * back once fixed, rather than bounced until the broker's delivery limit drops it without one.
     * An OutOfMemoryError or another VirtualMachineError is the process's state: it goes up, and the
     * message back to the queue.
     */
    private Classification classify(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.properties;
        try {
            return consumer.classifier.classify(properties.getMessageId(), properties.getType(), properties.getHeaders(),
                    delivery.body);
        } catch (VirtualMachineError e) {
            if (!(e instanceof StackOverflowError)) {
                throw e;
            }
            return new Classification.Rejected("unreadable: " + e);
        } catch (Throwable e) {
            return new Classification.Rejected("unreadable: " + e);
        }
    }

    /** By the inbox's outcome; whatever fails here sends the message back to the queue, never leaves it unsettled. */
    private void settle(Delivery delivery, Span span, Outcome outcome, Throwable failure) {
        AMQP.BasicProperties properties = delivery.properties;
        try {
            if (failure != null) {
                InboxTracing.ended(span, "requeued", failure.toString());
                Log.errorf(failure, "Message %s could not be handled; it goes back to the queue", properties.getMessageId());
                nack(delivery);
            } else if (outcome instanceof Outcome.Poison poison) {
                InboxTracing.ended(span, "poison", poison.reason());
                park(delivery, poison.reason());
            } else if (outcome instanceof Outcome.Transient transientFailure) {
                InboxTracing.ended(span, "requeued", transientFailure.reason());
                Log.warnf("Message %s goes back to the queue: %s", properties.getMessageId(), transientFailure.reason());
                nack(delivery);
            } else {
                if (outcome instanceof Outcome.Duplicate) {
                    // Worth seeing: at-least-once delivery at work (a relay or consumer crash, a replay).
                    Log.infof("Duplicate message %s: already in the inbox, acked without effect", properties.getMessageId());
                    InboxTracing.ended(span, "duplicate", null);
                } else if (outcome instanceof Outcome.Unchanged) {
                    // Not a redelivery: another event for an effect already had (the business's own key said so).
                    Log.infof("Message %s (%s) changed nothing: its effect was already had under another message id; acked",
                            properties.getMessageId(), properties.getType());
                    InboxTracing.ended(span, "unchanged", null);
                } else {
                    InboxConsumer.committedAt(properties).ifPresent(metrics::appliedAfterCommit);
                    InboxTracing.ended(span, "applied", null);
                }
                ack(delivery);
            }
        } catch (Throwable e) {
            Log.errorf(e, "Message %s could not be settled by its outcome (%s); it goes back to the queue",
                    properties.getMessageId(), outcome);
            nack(delivery);
        }
    }

    /**
     * A message this instance cannot read yet, from a producer upgraded before it: not poison, so not
     * parked. It stays unacked and nothing behind it on its channel is read (the channel's prefetch
     * fills and the broker sends no more), so none of its aggregate's later events overtakes it. It
     * goes back to the queue's head, in its place, with the channel, when an instance that reads it
     * takes the queue: this one replaced (its channels close at shutdown), or another given the
     * partition. Not counted in flight, so a drain or a shutdown does not wait for it. Held longer than
     * {@code hold-unreadable-for}, it is parked with its reason and this session starts over, so
     * that what waited behind it is delivered again, in order.
     */
    private void hold(Delivery delivery, String reason) {
        Subscription from = delivery.from;
        String version = delivery.properties.getType() + " v" + (delivery.properties.getHeaders() == null ? null
                : delivery.properties.getHeaders().get(InboxHeaders.SCHEMA_VERSION));
        if (consumer.holdsRunOut.contains(version)) {
            // Already waited for once, in vain: the old behaviour (a dead letter) rather than the queue paused again.
            park(delivery, reason + " (" + version + " was held " + settings.holdUnreadableFor() + " before and no instance"
                    + " that reads it came)");
            return;
        }
        metrics.held();
        Log.warnf("Holding message %s (%s) on %s: %s. Nothing behind it on %s is read until an instance that reads it"
                        + " takes the queue over, or for %s at most; then it is dead-lettered",
                delivery.properties.getMessageId(), delivery.properties.getType(), from.queue, reason, from.queue,
                settings.holdUnreadableFor());
        from.heldWhat = version + " " + delivery.properties.getMessageId() + " since " + Instant.now() + ": " + reason;
        from.held = reason;
        try {
            holds.schedule(() -> holdExpired(delivery, version, reason), settings.holdUnreadableFor().toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closingAlready) {
            Log.debugf("Session closing: the hold of %s ends with it", delivery.properties.getMessageId());
        }
        // Last: from here a drain or a shutdown no longer waits for it.
        settled(from);
    }

    /**
     * Nobody upgraded took the queue in time: the message is parked (its version too, so that the next one is not
     * held as long again), and the session starts over so that what waited behind it is delivered again, in order;
     * if it cannot be parked it goes back to the queue, and the session starts over all the same.
     */
    private void holdExpired(Delivery delivery, String version, String reason) {
        Subscription from = delivery.from;
        if (!session.stillReads(from)) {
            return; // the queue is going, or gone, to another instance with the message: its hold is over
        }
        consumer.holdsRunOut.add(version);
        Log.errorf("Message %s held on %s for %s and no instance that reads it took the queue: dead-lettered, the queue"
                + " is read on; later %s messages are dead-lettered at once", delivery.properties.getMessageId(), from.queue,
                settings.holdUnreadableFor(), version);
        consumer.inFlight.incrementAndGet();
        from.inFlight.incrementAndGet();
        park(delivery, reason + " (held " + settings.holdUnreadableFor() + ": no instance that reads it took the queue)",
                () -> session.fail("the hold of a message on " + from.queue + " ran out; reading it again from there"));
    }

    /** The queues paused behind a held message: queue → what is held, since when, why. */
    Map<String, String> held(Collection<Subscription> subscriptions) {
        Map<String, String> held = new TreeMap<>();
        subscriptions.stream().filter(s -> s.held != null).forEach(s -> held.put(s.queue, s.heldWhat));
        return held;
    }

    private void park(Delivery delivery, String reason) {
        park(delivery, reason, () -> { });
    }

    /** @param then run once the message is settled: safe in the dead-letter queue and its ack on its way, or requeued */
    private void park(Delivery delivery, String reason, Runnable then) {
        if (!delivery.settling()) {
            return;
        }
        metrics.poisoned();
        AMQP.BasicProperties properties = delivery.properties;
        submit(parking, delivery, () -> {
            for (int attempt = 1; ; attempt++) {
                try {
                    deadLetters.park(delivery.envelope, properties, delivery.body, reason);
                    consumer.recentDeadLetters.add(settings.queue(), properties.getMessageId(), properties.getType(), reason);
                    acked(delivery);
                    then.run();
                    return;
                } catch (Exception e) {
                    // The copy is not safe in the dead-letter queue: keep the original. Retried here
                    // (a requeue would spend the queue's delivery limit), then handed back.
                    if (attempt >= InboxConsumer.PARK_ATTEMPTS || !connection.isOpen() || !pause(attempt)) {
                        Log.errorf("Could not dead-letter message %s (%s); it goes back to the queue",
                                properties.getMessageId(), e);
                        requeued(delivery);
                        then.run();
                        return;
                    }
                    Log.warnf("Could not dead-letter message %s (attempt %d of %d): %s; retrying on a new channel",
                            properties.getMessageId(), attempt, InboxConsumer.PARK_ATTEMPTS, e);
                }
            }
        });
    }

    /** @return false if interrupted (the session is closing) */
    private boolean pause(int attempt) {
        try {
            TimeUnit.MILLISECONDS.sleep(Math.min(InboxConsumer.MIN_BACKOFF_MILLIS << attempt, InboxConsumer.MAX_BACKOFF_MILLIS));
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void ack(Delivery delivery) {
        if (delivery.settling()) {
            acked(delivery);
        }
    }

    void nack(Delivery delivery) {
        if (delivery.settling()) {
            requeued(delivery);
        }
    }

    private void acked(Delivery delivery) {
        submit(acks, delivery, () -> {
            try {
                delivery.from.channel.basicAck(delivery.envelope.getDeliveryTag(), false);
            } catch (Exception e) {
                lost(delivery.envelope, e);
            } finally {
                settled(delivery.from);
            }
        });
    }

    private void requeued(Delivery delivery) {
        submit(acks, delivery, () -> {
            try {
                delivery.from.channel.basicNack(delivery.envelope.getDeliveryTag(), false, true);
                metrics.requeued();
            } catch (Exception e) {
                lost(delivery.envelope, e);
            } finally {
                settled(delivery.from);
            }
        });
    }

    private void submit(ExecutorService executor, Delivery delivery, Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            lost(delivery.envelope, e);
            settled(delivery.from);
        }
    }

    private void settled(Subscription from) {
        from.inFlight.decrementAndGet();
        consumer.inFlight.decrementAndGet();
    }

    private void lost(Envelope envelope, Exception e) {
        // The channel died with the message unacked: the broker requeues it, the inbox absorbs the copy.
        Log.debugf("Delivery %d not settled, its channel is gone (%s); the broker redelivers it", envelope.getDeliveryTag(), e);
    }


    /** Lets what is being acked or dead-lettered finish (a few seconds at most), and ends every hold. */
    void close() {
        holds.shutdownNow();
        parking.shutdown();
        acks.shutdown();
        try {
            parking.awaitTermination(5, TimeUnit.SECONDS);
            acks.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
