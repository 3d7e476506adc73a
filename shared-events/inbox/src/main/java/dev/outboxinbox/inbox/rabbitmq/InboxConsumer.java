package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.outboxinbox.inbox.Classification;
import dev.outboxinbox.inbox.InboxBatcher;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxHeaders;
import dev.outboxinbox.inbox.InboxMessage;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.InboxTracing;
import dev.outboxinbox.inbox.InboxSink;
import dev.outboxinbox.inbox.MessageClassifier;
import dev.outboxinbox.inbox.Outcome;
import io.opentelemetry.api.trace.Span;
import io.quarkus.logging.Log;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The transport, and the only class that touches acknowledgements:
 * <ul>
 *   <li>a message that fails the contract is dead-lettered with the reason, then acked;</li>
 *   <li>a valid one goes to the inbox — the group-commit batcher for a service with
 *       {@link dev.outboxinbox.inbox.BatchEffects}, or the SmallRye channel of {@link InboxConnector}
 *       for one with an {@code @Incoming @Inbox} method — and is acked only after the transaction
 *       that recorded it committed, whether it took effect now or was a duplicate;</li>
 *   <li>one that could not be recorded for a transient reason is nacked back to the queue.</li>
 * </ul>
 *
 * <p>Built on the RabbitMQ Java client, with recovery of its own: a supervisor opens a connection,
 * declares the topology, consumes with a bounded prefetch, and when the connection dies (broker
 * restart, network) starts over with backoff, forever. Messages in flight on a dead channel are
 * redelivered by the broker, and the inbox absorbs the copies. (SmallRye's RabbitMQ connector was
 * used first; after a broker restart it failed its stream for good with "BackPressureFailure:
 * Queue is full" — smallrye-reactive-messaging#1906 — which deploy/chaos found.)
 */
@ApplicationScoped
public class InboxConsumer {

    private static final long MIN_BACKOFF_MILLIS = 500;
    // Short: a consumer idle while the broker is back only lets the queue grow.
    private static final long MAX_BACKOFF_MILLIS = 5_000;
    /** Attempts to dead-letter one message (about half a minute in all) before it goes back to the queue. */
    private static final int PARK_ATTEMPTS = 8;

    private final MessageClassifier classifier;
    private final InboxBatcher batcher;
    private final InboxHandler handler;
    private final InboxMetrics metrics;
    private final InboxTracing tracing;
    private final RecentDeadLetters recentDeadLetters;
    private final BrokerSettings broker;
    private final InboxConfig config;
    private final int prefetch;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicReference<String> problem = new AtomicReference<>("not connected yet");
    private final CountDownLatch stopping = new CountDownLatch(1);
    private volatile Session session;
    private volatile InboxSink inbox;
    private volatile Thread supervisor;

    InboxConsumer(MessageClassifier classifier, InboxBatcher batcher, InboxHandler handler, InboxMetrics metrics,
                  InboxTracing tracing, RecentDeadLetters recentDeadLetters, BrokerSettings broker, InboxConfig config) {
        this.classifier = classifier;
        this.batcher = batcher;
        this.handler = handler;
        this.metrics = metrics;
        this.tracing = tracing;
        this.recentDeadLetters = recentDeadLetters;
        this.broker = broker;
        this.config = config;
        this.prefetch = config.prefetch();
    }

    /**
     * A service applies its messages one way: a channel bound to {@link InboxConnector} (which starts
     * this consumer once SmallRye subscribed to it), or a {@code BatchEffects} bean (started here).
     */
    void start(@Observes StartupEvent event) {
        boolean channel = InboxConnector.bound(ConfigProvider.getConfig());
        if (channel && handler.appliesBatches()) {
            throw new IllegalStateException("both a BatchEffects bean and a channel bound to " + InboxConnector.NAME
                    + ": a service applies its messages one way");
        }
        if (!channel && !handler.appliesBatches()) {
            throw new IllegalStateException("nothing applies this service's messages: bind a channel to "
                    + InboxConnector.NAME + " (mp.messaging.incoming.<channel>.connector) and handle it with an"
                    + " @Incoming @Blocking @Inbox method, or implement BatchEffects");
        }
        if (!channel) {
            begin(batcher);
        }
    }

    /** Starts consuming into {@code sink}; once per process. */
    synchronized void begin(InboxSink sink) {
        if (inbox != null) {
            throw new IllegalStateException("the inbox consumer was started already");
        }
        inbox = sink;
        supervisor = new Thread(this::supervise, "rabbitmq-consumer-supervisor");
        supervisor.start();
    }

    /** Before the inbox stops: stop taking messages, let those in hand finish and be acked. */
    void stop(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) ShutdownEvent event) throws InterruptedException {
        Session current = session;
        if (current != null) {
            current.cancel();
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (inFlight.get() > 0 && System.nanoTime() < deadline) {
            TimeUnit.MILLISECONDS.sleep(50);
        }
        if (inFlight.get() > 0) {
            Log.warnf("%d messages still in hand at shutdown; the broker will redeliver them", inFlight.get());
        }
        stopping.countDown();
        Thread running = supervisor;
        if (running != null) {
            running.interrupt();
            running.join(10_000);
        }
    }

    /** null when consuming; else why not. */
    public String problem() {
        return problem.get();
    }

    public int inFlight() {
        return inFlight.get();
    }

    /** null while the inbox applies messages; else why not (an outage of the database, or not started). */
    String inboxProblem() {
        InboxSink current = inbox;
        return current == null ? "not consuming yet: no subscriber on the inbox channel" : current.problem();
    }

    private void supervise() {
        long backoff = MIN_BACKOFF_MILLIS;
        while (stopping.getCount() > 0) {
            try (Session opened = new Session(broker.factory().newConnection(config.consumer()))) {
                session = opened;
                problem.set(null);
                backoff = MIN_BACKOFF_MILLIS;
                Log.infof("Consuming %s from %s (prefetch %d) as %s", config.queue(), broker.describe(), prefetch, config.consumer());
                String cause = opened.awaitClosed(stopping);
                if (cause != null) {
                    problem.set("connection lost: " + cause);
                    Log.warnf("Connection to RabbitMQ lost (%s); unacked messages go back to the queue, reconnecting", cause);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                problem.set("cannot consume from " + broker.describe() + ": " + e);
                Log.warnf("Cannot consume from RabbitMQ (%s); retrying in %d ms", e.toString(), backoff);
            } finally {
                session = null;
            }
            try {
                if (stopping.await(backoff, TimeUnit.MILLISECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            backoff = Math.min(backoff * 2, MAX_BACKOFF_MILLIS);
        }
    }

    /**
     * One connection's life: a consuming channel, a confirm channel for dead letters, and one
     * thread each for acks and for dead-lettering, so no channel is used from two threads.
     */
    private final class Session implements AutoCloseable {

        private final Connection connection;
        private final Channel channel;
        private final DeadLetters deadLetters;
        private final ExecutorService acks = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-acks"));
        private final ExecutorService parking = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-dead-letters"));
        private final CountDownLatch closed = new CountDownLatch(1);
        private volatile String closedBecause;
        private volatile String consumerTag;

        Session(Connection connection) throws IOException {
            this.connection = connection;
            connection.addShutdownListener(this::closed);
            channel = connection.createChannel();
            channel.addShutdownListener(this::closed);
            TopologyDeclarer.declare(channel, config);
            deadLetters = new DeadLetters(connection, config.deadLetterExchangeName(), config.deadLetterQueueName());
            channel.basicQos(prefetch);
            consumerTag = channel.basicConsume(config.queue(), false, config.consumer(), new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
                    receive(envelope, properties, body);
                }

                @Override
                public void handleCancel(String tag) {
                    closed(new ShutdownSignalException(false, false, null, "the broker cancelled the consumer (queue deleted?)"));
                }
            });
        }

        private void closed(ShutdownSignalException cause) {
            if (closedBecause == null) {
                closedBecause = cause.getMessage();
            }
            closed.countDown();
        }

        /** @return why the connection closed, or null if the service is stopping */
        String awaitClosed(CountDownLatch stopping) throws InterruptedException {
            while (!closed.await(200, TimeUnit.MILLISECONDS)) {
                if (stopping.getCount() == 0) {
                    return null;
                }
            }
            return closedBecause;
        }

        void cancel() {
            try {
                if (consumerTag != null && channel.isOpen()) {
                    channel.basicCancel(consumerTag);
                }
            } catch (Exception e) {
                Log.debugf("cancel on a closing channel: %s", e);
            }
        }

        private void receive(Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            inFlight.incrementAndGet();
            Classification classification;
            try {
                classification = classifier.classify(properties.getMessageId(), properties.getType(),
                        properties.getHeaders(), body);
            } catch (RuntimeException e) {
                // A message the door cannot even read would otherwise close the channel and come back forever.
                classification = new Classification.Rejected("unreadable: " + e);
            }
            Span span = tracing.receiving(config.queue(), properties.getMessageId(), properties.getHeaders());
            if (classification instanceof Classification.Rejected rejected) {
                InboxTracing.ended(span, "poison", rejected.reason());
                park(envelope, properties, body, rejected.reason());
                return;
            }
            InboxMessage<?> message = ((Classification.Accepted) classification).message()
                    .withTraceparent(InboxTracing.traceparent(span));
            inbox.submit(message).whenComplete((outcome, failure) -> {
                if (failure != null) {
                    InboxTracing.ended(span, "requeued", failure.toString());
                    Log.errorf(failure, "Message %s could not be handled; it goes back to the queue", properties.getMessageId());
                    nack(envelope);
                } else if (outcome instanceof Outcome.Poison poison) {
                    InboxTracing.ended(span, "poison", poison.reason());
                    park(envelope, properties, body, poison.reason());
                } else if (outcome instanceof Outcome.Transient transientFailure) {
                    InboxTracing.ended(span, "requeued", transientFailure.reason());
                    Log.warnf("Message %s goes back to the queue: %s", properties.getMessageId(), transientFailure.reason());
                    nack(envelope);
                } else {
                    if (outcome instanceof Outcome.Duplicate) {
                        // Worth seeing: at-least-once delivery at work (a relay or consumer crash, a replay).
                        Log.infof("Duplicate message %s: already in the inbox, acked without effect", properties.getMessageId());
                        InboxTracing.ended(span, "duplicate", null);
                    } else {
                        committedAt(properties).ifPresent(metrics::appliedAfterCommit);
                        InboxTracing.ended(span, "applied", null);
                    }
                    ack(envelope);
                }
            });
        }

        private void park(Envelope envelope, AMQP.BasicProperties properties, byte[] body, String reason) {
            metrics.poisoned();
            submit(parking, envelope, () -> {
                for (int attempt = 1; ; attempt++) {
                    try {
                        deadLetters.park(envelope, properties, body, reason);
                        recentDeadLetters.add(properties.getMessageId(), properties.getType(), reason);
                        ack(envelope);
                        return;
                    } catch (Exception e) {
                        // The copy is not safe in the dead-letter queue: keep the original. Retried here
                        // (a requeue would spend the queue's delivery limit), then handed back.
                        if (attempt >= PARK_ATTEMPTS || !connection.isOpen() || !pause(attempt)) {
                            Log.errorf("Could not dead-letter message %s (%s); it goes back to the queue",
                                    properties.getMessageId(), e);
                            nack(envelope);
                            return;
                        }
                        Log.warnf("Could not dead-letter message %s (attempt %d of %d): %s; retrying on a new channel",
                                properties.getMessageId(), attempt, PARK_ATTEMPTS, e);
                    }
                }
            });
        }

        /** @return false if interrupted (the session is closing) */
        private boolean pause(int attempt) {
            try {
                TimeUnit.MILLISECONDS.sleep(Math.min(MIN_BACKOFF_MILLIS << attempt, MAX_BACKOFF_MILLIS));
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        private void ack(Envelope envelope) {
            submit(acks, envelope, () -> {
                try {
                    channel.basicAck(envelope.getDeliveryTag(), false);
                } catch (Exception e) {
                    lost(envelope, e);
                } finally {
                    inFlight.decrementAndGet();
                }
            });
        }

        private void nack(Envelope envelope) {
            submit(acks, envelope, () -> {
                try {
                    channel.basicNack(envelope.getDeliveryTag(), false, true);
                    metrics.requeued();
                } catch (Exception e) {
                    lost(envelope, e);
                } finally {
                    inFlight.decrementAndGet();
                }
            });
        }

        private void submit(ExecutorService executor, Envelope envelope, Runnable task) {
            try {
                executor.execute(task);
            } catch (RejectedExecutionException e) {
                lost(envelope, e);
                inFlight.decrementAndGet();
            }
        }

        private void lost(Envelope envelope, Exception e) {
            // The channel died with the message unacked: the broker requeues it, the inbox absorbs the copy.
            Log.debugf("Delivery %d not settled, its channel is gone (%s); the broker redelivers it", envelope.getDeliveryTag(), e);
        }

        @Override
        public void close() {
            parking.shutdown();
            acks.shutdown();
            try {
                parking.awaitTermination(5, TimeUnit.SECONDS);
                acks.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try {
                if (connection.isOpen()) {
                    connection.close(5_000);
                }
            } catch (Exception e) {
                Log.debugf("closing the connection: %s", e);
            }
        }
    }

    /** The producer's commit time, where the message says it (outbox-relay writes it; other producers may not). */
    static Optional<Instant> committedAt(AMQP.BasicProperties properties) {
        Object millis = properties.getHeaders() == null ? null : properties.getHeaders().get(InboxHeaders.COMMITTED_AT);
        return millis instanceof Number number ? Optional.of(Instant.ofEpochMilli(number.longValue())) : Optional.empty();
    }
}
