package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.InboxHeaders;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.InboxSink;
import dev.outboxinbox.inbox.InboxTracing;
import dev.outboxinbox.inbox.MessageClassifier;
import io.quarkus.logging.Log;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.microprofile.config.Config;

/**
 * The transport of one consumed stream (an inbox channel, or a {@link dev.outboxinbox.inbox.BatchEffects}
 * service's one queue), in four parts a reader can take one at a time:
 * <ul>
 *   <li>this class, the <b>supervisor</b>: a thread that opens a connection, declares the topology
 *       ({@link TopologyDeclarer}), consumes with a bounded prefetch, and when the connection dies (broker
 *       restart, network) starts over with backoff, forever. Messages in flight on a dead channel are
 *       redelivered by the broker, and the inbox absorbs the copies;</li>
 *   <li>the <b>session</b> ({@link ConsumerSession}): one connection's life, a channel per queue read;</li>
 *   <li>the <b>settlement</b> ({@link Settlement}): what becomes of each delivery, and the only code that
 *       acks. A message that fails the contract is dead-lettered with the reason, then acked; one this
 *       instance cannot read yet is held; a valid one goes to the inbox ({@link InboxSink}: the
 *       group-commit batcher, or the SmallRye channel of {@link InboxConnector}) and is acked only after
 *       the transaction that recorded it committed; one that could not be recorded for a transient
 *       reason goes back to the queue;</li>
 *   <li>partitioned ({@code partitioning.count} &gt; 0), the <b>share-out</b> ({@link PartitionShareOut}):
 *       every heartbeat, the partitions this instance holds the lock of are read, each on a channel of
 *       its own, and one is given up by cancelling its consumer, letting what it had in hand be applied
 *       and acked, closing its channel, and only then unlocking it.</li>
 * </ul>
 * (SmallRye's RabbitMQ connector was used first; after a broker restart it failed its stream for good
 * with "BackPressureFailure: Queue is full" — smallrye-reactive-messaging#1906 — which deploy/chaos found.)
 */
public final class InboxConsumer {

    static final long MIN_BACKOFF_MILLIS = 500;
    // Short: a consumer idle while the broker is back only lets the queue grow.
    static final long MAX_BACKOFF_MILLIS = 5_000;
    /** Attempts to dead-letter one message (about half a minute in all) before it goes back to the queue. */
    static final int PARK_ATTEMPTS = 8;

    final ChannelSettings settings;
    final MessageClassifier classifier;
    final InboxMetrics metrics;
    final InboxTracing tracing;
    final RecentDeadLetters recentDeadLetters;
    /** Messages taken in and not settled yet, over every session: what a shutdown waits for. */
    final AtomicInteger inFlight = new AtomicInteger();
    /**
     * The event types and versions ({@code type vN}) whose hold ran out in this process: nobody upgraded came within
     * hold-unreadable-for, so a later message of one is dead-lettered at once rather than held as long again.
     */
    final Set<String> holdsRunOut = ConcurrentHashMap.newKeySet();
    private final BrokerSettings broker;
    private final AtomicReference<String> problem = new AtomicReference<>("not connected yet");
    /** Null for one queue; else the share-out of the partitions, used by the supervisor thread alone. */
    private final PartitionShareOut shareOut;
    private final CountDownLatch stopping = new CountDownLatch(1);
    private volatile ConsumerSession session;
    private volatile InboxSink inbox;
    private volatile Thread supervisor;

    /**
     * @param metrics    this stream's consumer's metrics
     * @param datasource where the partitions' locks are taken (the service's datasource settings)
     */
    InboxConsumer(ChannelSettings settings, MessageClassifier classifier, InboxMetrics metrics, InboxTracing tracing,
                  RecentDeadLetters recentDeadLetters, BrokerSettings broker, Config datasource) {
        this.settings = settings;
        this.classifier = classifier;
        this.metrics = metrics;
        this.tracing = tracing;
        this.recentDeadLetters = recentDeadLetters;
        this.broker = broker;
        this.shareOut = settings.partitioning().count() > 0 ? new PartitionShareOut(this, datasource) : null;
        if (shareOut != null) {
            shareOut.refuseTakenName();
        }
    }

    /** Starts consuming into {@code sink}; once. */
    synchronized void begin(InboxSink sink) {
        if (inbox != null) {
            throw new IllegalStateException("the consumer of " + settings.queue() + " was started already");
        }
        inbox = sink;
        supervisor = new Thread(this::supervise, "rabbitmq-consumer-supervisor-" + settings.channel());
        supervisor.start();
    }

    /** No more deliveries on any queue; what is in hand is still applied and acked. */
    void cancel() {
        ConsumerSession current = session;
        if (current != null) {
            current.cancel();
        }
    }

    /** Waits for what is in hand to be applied and acked, up to {@code deadline} (System.nanoTime()). */
    void drain(long deadline) throws InterruptedException {
        while (inFlight.get() > 0 && System.nanoTime() < deadline) {
            TimeUnit.MILLISECONDS.sleep(50);
        }
        if (inFlight.get() > 0) {
            Log.warnf("%d messages of %s still in hand at shutdown; the broker will redeliver them", inFlight.get(),
                    settings.queue());
        }
    }

    /** Ends the supervisor: it closes its session (what is still unacked goes back to the queue) and returns. */
    void end() {
        stopping.countDown();
        Thread running = supervisor;
        if (running != null) {
            running.interrupt();
        }
    }

    /** Waits for the supervisor to be gone, 10 s at most. */
    void join() throws InterruptedException {
        Thread running = supervisor;
        if (running != null) {
            running.join(10_000);
        }
    }

    public ChannelSettings settings() {
        return settings;
    }

    /** null when consuming; else why not. */
    public String problem() {
        String broker = problem.get();
        return broker != null || shareOut == null ? broker : shareOut.problem();
    }

    /**
     * Which partitions this instance reads, of how many, among which instances; null when the consumer
     * reads one queue.
     */
    public String partitions() {
        return shareOut == null ? null : shareOut.read();
    }

    public int inFlight() {
        return inFlight.get();
    }

    /** The queues paused behind a message this instance cannot read yet (queue → the message and why); empty normally. */
    public Map<String, String> held() {
        ConsumerSession current = session;
        return current == null ? Map.of() : current.held();
    }

    /** null while the inbox applies messages; else why not (an outage of the database, or not started). */
    String inboxProblem() {
        InboxSink current = inbox;
        return current == null ? "not consuming yet: no subscriber on the inbox channel" : current.problem();
    }

    /** Where valid messages go: null until {@link #begin}. */
    InboxSink sink() {
        return inbox;
    }

    private void supervise() {
        long backoff = MIN_BACKOFF_MILLIS;
        while (stopping.getCount() > 0) {
            // The session owns the connection from here: whatever fails below (a refused declaration, a
            // refused subscription), closing the session closes its connection, channels and threads.
            try (ConsumerSession opened = new ConsumerSession(this, broker.factory().newConnection(settings.consumer()))) {
                session = opened;
                opened.declare();
                if (shareOut == null) {
                    opened.subscribe(settings.queue());
                    Log.infof("Consuming %s from %s (prefetch %d) as %s", settings.queue(), broker.describe(),
                            settings.prefetch(), settings.consumer());
                } else {
                    Log.infof("Consuming the partitions of %s that this instance (%s) is given, from %s (prefetch %d each)",
                            settings.queue(), shareOut.instance(), broker.describe(), settings.prefetch());
                }
                problem.set(null);
                backoff = MIN_BACKOFF_MILLIS;
                String cause = opened.awaitClosed(stopping, shareOut);
                if (cause != null) {
                    problem.set("not consuming: " + cause + "; starting again");
                    Log.warnf("Not consuming %s: %s; unacked messages go back to the queue, starting again", settings.queue(), cause);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                // A broker that refuses (406, 403, 404, a missing plugin) is told apart from one that is down by its words.
                String words = BrokerErrors.describe(e);
                problem.set("cannot consume from " + broker.describe() + ": " + words);
                Log.warnf("Cannot consume %s from RabbitMQ: %s; retrying in %d ms", settings.queue(), words, backoff);
            } finally {
                session = null;
                if (shareOut != null) {
                    // Without a broker connection this instance reads nothing: its partitions go to the others.
                    shareOut.connectionLost();
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

    /** The producer's commit time, where the message says it (outbox-relay writes it; other producers may not). */
    static Optional<Instant> committedAt(AMQP.BasicProperties properties) {
        Object millis = properties.getHeaders() == null ? null : properties.getHeaders().get(InboxHeaders.COMMITTED_AT);
        return millis instanceof Number number ? Optional.of(Instant.ofEpochMilli(number.longValue())) : Optional.empty();
    }
}
