package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
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
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The transport, and the only class that touches acknowledgements:
 * <ul>
 *   <li>a message that fails the contract is dead-lettered with the reason, then acked;</li>
 *   <li>one this instance cannot read yet (a newer version of its event) is held, unacked, and nothing
 *       behind it on its queue is read until an upgraded instance takes the queue over, or for
 *       {@code inbox.hold-unreadable-for} at most, then it is dead-lettered ({@link #hold});</li>
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
 * redelivered by the broker, and the inbox absorbs the copies.
 *
 * <p>Partitioned ({@code inbox.partitioning.count} &gt; 0; see {@link InboxConfig.Partitioning}), the
 * supervisor also keeps the instances' share-out every heartbeat ({@link PartitionAssignment}): it reads
 * each partition it holds the lock of on a channel of its own, and gives one up by cancelling its
 * consumer, letting what it had in hand be applied and acked, closing its channel, and only then
 * unlocking it. (SmallRye's RabbitMQ connector was
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
    private final AtomicReference<String> partitionProblem = new AtomicReference<>();
    /**
     * The event types and versions ({@code type vN}) whose hold ran out in this process: nobody upgraded came within
     * inbox.hold-unreadable-for, so a later message of one is dead-lettered at once rather than held as long again.
     */
    private final Set<String> holdsRunOut = ConcurrentHashMap.newKeySet();
    /** Null for one queue; else the share-out of the partitions, used by the supervisor thread alone. */
    private final PartitionAssignment partitions;
    private volatile String partitionsRead = "";
    /** When the lock session failed (System.nanoTime()), while it has not come back; supervisor thread only. */
    private Long lostSince;
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
        this.partitions = config.partitioning().count() > 0
                ? new PartitionAssignment(config, ConfigProvider.getConfig()) : null;
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
        if (partitions != null) {
            partitions.refuseTakenName();
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
        String broker = problem.get();
        return broker != null ? broker : partitionProblem.get();
    }

    /**
     * Which partitions this instance reads, of how many, among which instances; null when the consumer
     * reads one queue.
     */
    public String partitions() {
        return partitions == null ? null : partitionsRead;
    }

    public int inFlight() {
        return inFlight.get();
    }

    /** The queues paused behind a message this instance cannot read yet (queue → the message and why); empty normally. */
    public Map<String, String> held() {
        Session current = session;
        return current == null ? Map.of() : current.held();
    }

    /** null while the inbox applies messages; else why not (an outage of the database, or not started). */
    String inboxProblem() {
        InboxSink current = inbox;
        return current == null ? "not consuming yet: no subscriber on the inbox channel" : current.problem();
    }

    private void supervise() {
        long backoff = MIN_BACKOFF_MILLIS;
        while (stopping.getCount() > 0) {
            // The session owns the connection from here: whatever fails below (a refused declaration, a
            // refused subscription), closing the session closes its connection, channels and threads.
            try (Session opened = new Session(broker.factory().newConnection(config.consumer()))) {
                session = opened;
                opened.declare();
                if (partitions == null) {
                    opened.subscribe(config.queue());
                    Log.infof("Consuming %s from %s (prefetch %d) as %s", config.queue(), broker.describe(), prefetch, config.consumer());
                } else {
                    Log.infof("Consuming the partitions of %s that this instance (%s) is given, from %s (prefetch %d each)",
                            config.queue(), partitions.instance(), broker.describe(), prefetch);
                }
                problem.set(null);
                backoff = MIN_BACKOFF_MILLIS;
                String cause = opened.awaitClosed(stopping);
                if (cause != null) {
                    problem.set("not consuming: " + cause + "; starting again");
                    Log.warnf("Not consuming: %s; unacked messages go back to the queue, starting again", cause);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                // A broker that refuses (406, 403, 404, a missing plugin) is told apart from one that is down by its words.
                String words = BrokerErrors.describe(e);
                problem.set("cannot consume from " + broker.describe() + ": " + words);
                Log.warnf("Cannot consume from RabbitMQ: %s; retrying in %d ms", words, backoff);
            } finally {
                session = null;
                if (partitions != null) {
                    // Without a broker connection this instance reads nothing: its partitions go to the others.
                    givePartitionsUp();
                    lostSince = null;
                }
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
     * One heartbeat of the share-out: give up the partitions another instance should read (each once
     * drained), take the free ones this instance should.
     *
     * <p>When the lock session fails (a database restart, a terminated session), its locks go with it,
     * but this instance keeps reading what it read, for up to the lease: single active consumer keeps
     * any instance that takes one of those locks meanwhile waiting on the queue, and once the session
     * is back this one takes each lock again or, when another holds it, closes that channel at once
     * (what it had in hand goes back to the queue's head, ahead of the rest, for the new reader; a copy
     * whose first transaction is still running waits on its inbox row and is a duplicate once that
     * commits). A blip costs no redelivery; a session gone longer than the lease means this instance
     * lost its database, and it lets every partition go so that the others read them.
     */
    private void rebalance(Session current) {
        try {
            PartitionAssignment.Plan plan = partitions.plan(applying());
            if (lostSince != null) {
                reclaim(current);
                plan = partitions.plan(applying());
                lostSince = null;
            }
            for (int partition : plan.release()) {
                current.unsubscribe(config.partitionQueue(partition), partitions.drainTimeout());
                partitions.unlock(partition);
            }
            for (int partition : plan.acquire()) {
                // Not while another instance still consumes it (draining, or frozen until the broker drops it):
                // taking it then would only queue this one behind, and hand it back on the next change.
                if (!current.consumed(config.partitionQueue(partition)) && partitions.tryLock(partition)) {
                    current.subscribe(config.partitionQueue(partition));
                }
            }
            partitionProblem.set(null);
            describePartitions(plan.members());
        } catch (IOException e) {
            current.fail("cannot subscribe to a partition: " + BrokerErrors.describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            partitions.lost();
            if (lostSince == null) {
                lostSince = System.nanoTime();
                Log.warnf("Partitions: %s; reading on for up to %s while the session comes back", e.getMessage(), partitions.lease());
            }
            boolean pastLease = System.nanoTime() - lostSince > partitions.lease().toNanos();
            partitionProblem.set("cannot share the partitions out through the database" + (pastLease ? " (partitions given up)" : "")
                    + ": " + e.getMessage());
            if (pastLease && current.reading()) {
                Log.errorf("Partitions: no session for longer than the lease (%s): every partition is given up to the others",
                        partitions.lease());
                current.unsubscribeAll();
                describePartitions(List.of());
            }
        }
    }

    /**
     * Stopping (deliveries cancelled, what is in hand being applied): the locks stay with this instance
     * until the session closes, after the drain, so that no other instance reads a partition while
     * earlier messages of it are still being applied here (PartitionAssignment#leave).
     */
    private void keepLocksWhileDraining() {
        try {
            partitions.leave();
        } catch (Exception e) {
            Log.warnf("Partitions: while draining: %s", e.getMessage());
        }
    }

    /** Whether this instance can apply what it reads: not in an outage of its database (the sink's probe failed). */
    private boolean applying() {
        InboxSink current = inbox;
        return current == null || !current.outage();
    }

    /** After a lost session: the lock of each partition still read, taken again, or the partition let go at once. */
    private void reclaim(Session current) throws SQLException {
        for (int partition = 0; partition < partitions.count(); partition++) {
            String queue = config.partitionQueue(partition);
            if (current.reads(queue) && !partitions.tryLock(partition)) {
                Log.warnf("Partitions: %s is another instance's now; letting it go", queue);
                current.drop(queue);
            }
        }
    }

    private void givePartitionsUp() {
        partitions.lost();
        describePartitions(List.of());
    }

    private void describePartitions(List<String> members) {
        String read = partitions.owned().toString() + " of " + partitions.count() + ", instances " + members;
        if (!read.equals(partitionsRead)) {
            Log.infof("Partitions of %s: %s reads %s", config.queue(), partitions.instance(), read);
            partitionsRead = read;
        }
    }

    /**
     * One connection's life: a consuming channel per queue read (the queue, or each partition this
     * instance holds), a confirm channel for dead letters, and one thread each for acks and for
     * dead-lettering, so no channel is used from two threads (a partition's channel is cancelled and
     * closed from the supervisor's, once nothing of it is left to ack).
     */
    private final class Session implements AutoCloseable {

        private final Connection connection;
        private final Map<String, Subscription> subscriptions = new ConcurrentHashMap<>();
        private final DeadLetters deadLetters;
        private final ExecutorService acks = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-acks"));
        private final ExecutorService parking = Executors.newSingleThreadExecutor(r -> new Thread(r, "inbox-dead-letters"));
        /** Ends the hold of a message nobody upgraded took within inbox.hold-unreadable-for. */
        private final ScheduledExecutorService holds = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "inbox-holds");
            thread.setDaemon(true);
            return thread;
        });
        private final CountDownLatch closed = new CountDownLatch(1);
        private volatile String closedBecause;
        private volatile boolean cancelled;
        /** Set before this session closes its own connection: the channels' closes that follow are expected. */
        private volatile boolean closing;

        /** Takes the connection over: from here on {@link #close()} closes it, whatever fails. */
        Session(Connection connection) {
            this.connection = connection;
            connection.addShutdownListener(cause -> {
                if (!closing) {
                    closed("the connection closed: " + BrokerErrors.describe(cause));
                }
            });
            deadLetters = new DeadLetters(connection, config.deadLetterExchangeName(), config.deadLetterQueueName());
        }

        /** Declares the topology; a refusal closes only the declaring channel, and {@link #close()} the rest. */
        void declare() throws IOException {
            try (Channel declaring = connection.createChannel()) {
                TopologyDeclarer.declare(declaring, config);
            } catch (TimeoutException e) {
                throw new IOException("closing the channel that declared the topology: " + e, e);
            }
        }

        /** Reads {@code queue} on a channel of its own, with its own prefetch. */
        void subscribe(String queue) throws IOException {
            if (cancelled) {
                return;
            }
            Channel channel = connection.createChannel();
            Subscription subscription = new Subscription(queue, channel);
            // Any close this session did not ask for stops the queue's consumption: by the broker (a
            // channel error), or by the client library itself, which closes a channel whose callback
            // threw and calls that a close by the application. Either way the session starts over.
            channel.addShutdownListener(cause -> {
                if (!subscription.closing && !closing) {
                    closed("the channel reading " + queue + " closed: " + BrokerErrors.describe(cause));
                }
            });
            channel.basicQos(prefetch);
            subscriptions.put(queue, subscription);
            subscription.tag = channel.basicConsume(queue, false, config.consumer(), new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
                    Delivery delivery = new Delivery(subscription, envelope, properties, body);
                    try {
                        receive(delivery);
                    } catch (Throwable e) {
                        // Never out of this callback: the client would close the channel, and this queue would stop being read.
                        Log.errorf(e, "Message %s could not be taken in; it goes back to the queue", properties.getMessageId());
                        nack(delivery);
                    }
                }

                @Override
                public void handleCancel(String tag) {
                    if (!subscription.closing) {
                        closed("the broker cancelled the consumer of " + queue + " (the queue was deleted?)");
                    }
                }
            });
        }

        /**
         * Stops reading {@code queue}: no more deliveries, then what is in hand is applied and acked (up
         * to {@code drain}; what is left after that goes back to the queue with the channel), then its
         * channel is closed. When this returns, this instance has nothing of that queue unacked.
         */
        void unsubscribe(String queue, Duration drain) throws InterruptedException {
            Subscription subscription = subscriptions.remove(queue);
            if (subscription == null) {
                return;
            }
            subscription.cancel();
            long deadline = System.nanoTime() + drain.toNanos();
            while (subscription.inFlight.get() > 0 && System.nanoTime() < deadline) {
                TimeUnit.MILLISECONDS.sleep(10);
            }
            if (subscription.inFlight.get() > 0) {
                Log.warnf("%d messages of %s still in hand after %s; they go back to the queue", subscription.inFlight.get(),
                        queue, drain);
            }
            subscription.close();
        }

        /** Stops reading every queue now: what is in hand goes back to the queues with the channels. */
        void unsubscribeAll() {
            List.copyOf(subscriptions.keySet()).forEach(this::drop);
        }

        /** Stops reading {@code queue} now: what is in hand goes back to the queue's head with the channel. */
        void drop(String queue) {
            Subscription subscription = subscriptions.remove(queue);
            if (subscription != null) {
                subscription.close();
            }
        }

        /** Whether the broker shows a consumer on {@code queue} (another instance's: this one does not read it). */
        boolean consumed(String queue) throws IOException {
            try (Channel asking = connection.createChannel()) {
                return asking.queueDeclarePassive(queue).getConsumerCount() > 0;
            } catch (TimeoutException e) {
                throw new IOException("closing the channel that counted the consumers of " + queue + ": " + e, e);
            }
        }

        boolean reads(String queue) {
            return subscriptions.containsKey(queue);
        }

        boolean reading() {
            return !subscriptions.isEmpty();
        }

        /** Ends this connection's life: the supervisor starts over with a new one. */
        void fail(String reason) {
            closed(reason);
        }

        private synchronized void closed(String reason) {
            if (closedBecause == null) {
                closedBecause = reason;
            }
            closed.countDown();
        }

        /**
         * Waits for the end of this connection's life; partitioned, keeps the share-out meanwhile.
         * @return why the connection closed, or null if the service is stopping
         */
        String awaitClosed(CountDownLatch stopping) throws InterruptedException {
            long nextBeat = System.nanoTime();
            while (true) {
                if (partitions != null && System.nanoTime() - nextBeat >= 0) {
                    if (cancelled) {
                        keepLocksWhileDraining();
                    } else {
                        rebalance(this);
                    }
                    nextBeat = System.nanoTime() + partitions.heartbeat().toNanos();
                }
                if (closed.await(partitions == null ? 200 : 100, TimeUnit.MILLISECONDS)) {
                    return closedBecause;
                }
                if (stopping.getCount() == 0) {
                    return null;
                }
            }
        }

        /** Before shutdown: no more deliveries on any queue, and no new subscription. */
        void cancel() {
            cancelled = true;
            subscriptions.values().forEach(Subscription::cancel);
        }

        private void receive(Delivery delivery) {
            if (delivery.from.held != null) {
                // Behind a held message: not read, not settled; it goes back to the queue, in its place, with the channel.
                return;
            }
            inFlight.incrementAndGet();
            delivery.from.inFlight.incrementAndGet();
            AMQP.BasicProperties properties = delivery.properties;
            Classification classification = classify(delivery);
            Span span = Span.getInvalid();
            try {
                span = tracing.receiving(config.queue(), properties.getMessageId(), properties.getHeaders());
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
                inbox.submit(message).whenComplete((outcome, failure) -> settle(delivery, receiving, outcome, failure));
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
                return classifier.classify(properties.getMessageId(), properties.getType(), properties.getHeaders(),
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
                        committedAt(properties).ifPresent(metrics::appliedAfterCommit);
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
         * {@code inbox.hold-unreadable-for}, it is parked with its reason and this session starts over, so
         * that what waited behind it is delivered again, in order.
         */
        private void hold(Delivery delivery, String reason) {
            Subscription from = delivery.from;
            String version = delivery.properties.getType() + " v" + (delivery.properties.getHeaders() == null ? null
                    : delivery.properties.getHeaders().get(InboxHeaders.SCHEMA_VERSION));
            if (holdsRunOut.contains(version)) {
                // Already waited for once, in vain: the old behaviour (a dead letter) rather than the queue paused again.
                park(delivery, reason + " (" + version + " was held " + config.holdUnreadableFor() + " before and no instance"
                        + " that reads it came)");
                return;
            }
            metrics.held();
            Log.warnf("Holding message %s (%s) on %s: %s. Nothing behind it on %s is read until an instance that reads it"
                            + " takes the queue over, or for %s at most; then it is dead-lettered",
                    delivery.properties.getMessageId(), delivery.properties.getType(), from.queue, reason, from.queue,
                    config.holdUnreadableFor());
            from.heldWhat = version + " " + delivery.properties.getMessageId() + " since " + Instant.now() + ": " + reason;
            from.held = reason;
            try {
                holds.schedule(() -> holdExpired(delivery, version, reason), config.holdUnreadableFor().toMillis(), TimeUnit.MILLISECONDS);
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
            if (from.closing || closing || cancelled || subscriptions.get(from.queue) != from || !from.channel.isOpen()) {
                return; // the queue is going, or gone, to another instance with the message: its hold is over
            }
            holdsRunOut.add(version);
            Log.errorf("Message %s held on %s for %s and no instance that reads it took the queue: dead-lettered, the queue"
                    + " is read on; later %s messages are dead-lettered at once", delivery.properties.getMessageId(), from.queue,
                    config.holdUnreadableFor(), version);
            inFlight.incrementAndGet();
            from.inFlight.incrementAndGet();
            park(delivery, reason + " (held " + config.holdUnreadableFor() + ": no instance that reads it took the queue)",
                    () -> fail("the hold of a message on " + from.queue + " ran out; reading it again from there"));
        }

        /** The queues paused behind a held message: queue → what is held, since when, why. */
        Map<String, String> held() {
            Map<String, String> held = new TreeMap<>();
            subscriptions.values().stream().filter(s -> s.held != null).forEach(s -> held.put(s.queue, s.heldWhat));
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
                        recentDeadLetters.add(properties.getMessageId(), properties.getType(), reason);
                        acked(delivery);
                        then.run();
                        return;
                    } catch (Exception e) {
                        // The copy is not safe in the dead-letter queue: keep the original. Retried here
                        // (a requeue would spend the queue's delivery limit), then handed back.
                        if (attempt >= PARK_ATTEMPTS || !connection.isOpen() || !pause(attempt)) {
                            Log.errorf("Could not dead-letter message %s (%s); it goes back to the queue",
                                    properties.getMessageId(), e);
                            requeued(delivery);
                            then.run();
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

        private void ack(Delivery delivery) {
            if (delivery.settling()) {
                acked(delivery);
            }
        }

        private void nack(Delivery delivery) {
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
            inFlight.decrementAndGet();
        }

        private void lost(Envelope envelope, Exception e) {
            // The channel died with the message unacked: the broker requeues it, the inbox absorbs the copy.
            Log.debugf("Delivery %d not settled, its channel is gone (%s); the broker redelivers it", envelope.getDeliveryTag(), e);
        }

        @Override
        public void close() {
            closing = true;
            holds.shutdownNow();
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

    /** One queue read on one channel: its deliveries are acked on that channel, and counted until they are. */
    private static final class Subscription {

        private final String queue;
        private final Channel channel;
        private final AtomicInteger inFlight = new AtomicInteger();
        private volatile String tag;
        /** Set when this instance stops reading the queue on purpose: the cancel and close that follow are expected. */
        private volatile boolean closing;
        /** Why a message of this queue is held ({@link Session#hold}): nothing behind it is read. Null normally. */
        private volatile String held;
        /** The held message, since when, why: what readiness shows. */
        private volatile String heldWhat;

        Subscription(String queue, Channel channel) {
            this.queue = queue;
            this.channel = channel;
        }

        void cancel() {
            try {
                if (tag != null && channel.isOpen()) {
                    channel.basicCancel(tag);
                }
            } catch (Exception e) {
                Log.debugf("cancelling the consumer of %s on a closing channel: %s", queue, e);
            }
        }

        void close() {
            closing = true;
            try {
                if (channel.isOpen()) {
                    channel.close();
                }
            } catch (Exception e) {
                Log.debugf("closing the channel of %s: %s", queue, e);
            }
        }
    }

    /** One message in hand, settled once: acked, requeued, or parked and then acked. */
    private static final class Delivery {

        private final Subscription from;
        private final Envelope envelope;
        private final AMQP.BasicProperties properties;
        private final byte[] body;
        private final AtomicBoolean settling = new AtomicBoolean();

        Delivery(Subscription from, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            this.from = from;
            this.envelope = envelope;
            this.properties = properties;
            this.body = body;
        }

        /** @return true the first time: the caller settles it (a second verdict, after a failure, is dropped) */
        boolean settling() {
            return settling.compareAndSet(false, true);
        }
    }

    /** The producer's commit time, where the message says it (outbox-relay writes it; other producers may not). */
    static Optional<Instant> committedAt(AMQP.BasicProperties properties) {
        Object millis = properties.getHeaders() == null ? null : properties.getHeaders().get(InboxHeaders.COMMITTED_AT);
        return millis instanceof Number number ? Optional.of(Instant.ofEpochMilli(number.longValue())) : Optional.empty();
    }
}
