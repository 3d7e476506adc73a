package dev.outboxinbox.relay;

import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Topology;
import io.quarkus.logging.Log;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Publishes a batch to RabbitMQ persistent, {@code mandatory} and publisher-confirmed, with many
 * confirms in flight at once, and reports success only when the broker has taken responsibility
 * for every message of it: in a queue, or parked in {@value Topology#RELAY_PARKING_QUEUE} with the
 * reason it could not go where it belongs.
 *
 * <p>Two kinds of "no" are told apart. A broker that is down (connection refused or lost, a timeout)
 * fails the batch, to be retried whole. A broker that <em>refuses one exchange</em> ({@link BrokerRefusal}:
 * no permission to declare or write it, or it exists with another type) closes only the channel it
 * was asked on; the events for that exchange are parked like unroutable ones and the rest go on.
 * Exchanges are declared on a throwaway channel for that reason, and each exchange is published to
 * on a channel of its own: a channel closed by a refusal is that exchange's, replaced, never taken
 * for an outage. (So events for different exchanges are not ordered among themselves; those for one
 * exchange are.)
 *
 * <p>The client's automatic recovery is off on purpose: confirms outstanding on a lost channel
 * can never arrive, so a lost connection fails the batch and the next attempt opens a fresh one.
 * Every channel has listeners of its own ({@link ConfirmChannel}), so a late confirm, return or
 * shutdown of a channel that was discarded reaches no batch but its own, which nobody awaits any more.
 *
 * <p>Publishing holds a lock; what readiness reads ({@link #isConnected()}, {@link #brokerState()},
 * {@link #refusals()}) does not take it, so a probe never waits behind a batch, a republish or a
 * publish that a broker alarm blocks, and {@link #abortPublishing()} can end such a publish from outside.
 */
@ApplicationScoped
class ConfirmingPublisher {

    /** Parked events taken, sent on and acked at a time by {@link #republishParked()}. */
    private static final int REPUBLISH_CHUNK = 500;

    private final ConnectionFactory factory;
    private final HeldAggregates held;
    private final RelayConfig.Publishing config;
    private final String connectionName;
    private final ReentrantLock lock = new ReentrantLock();
    /** Exchanges declared on the current connection; under the lock. */
    private final Set<String> declaredExchanges = new HashSet<>();
    /** A publishing channel per exchange, so that a refusal closes only its exchange's; under the lock. */
    private final Map<String, ConfirmChannel> channels = new HashMap<>();
    /** The channel parked events are taken and acked on; lives as long as the connection (see {@link #republishParked()}). */
    private Channel parkedTaker;
    private volatile Connection connection;
    /** What the broker said when it blocked publishing (connection.blocked), until it unblocks or a batch is confirmed. */
    private volatile String blocked;
    /** Why the last attempt to connect failed; null once connected. */
    private volatile String connectFailure;
    /** Exchanges the broker refuses now, with its words: readiness shows them; a later event that goes through clears its exchange. */
    private final Map<String, String> refusals = new ConcurrentHashMap<>();

    ConfirmingPublisher(RelayConfig config, HeldAggregates held) {
        this.held = held;
        this.config = config.publishing();
        this.connectionName = config.publishing().connectionName().orElse("outbox-relay");
        this.factory = new ConnectionFactory();
        factory.setHost(config.broker().host());
        factory.setPort(config.broker().port());
        factory.setVirtualHost(config.broker().virtualHost());
        factory.setUsername(config.broker().user());
        factory.setPassword(config.broker().password());
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        factory.setConnectionTimeout(5_000);
        factory.setRequestedHeartbeat(10);
        // A declaration, a basic.get or a channel close on a connection the broker stopped reading (an
        // alarm) fails after this instead of the library's 10 minutes.
        factory.setChannelRpcTimeout((int) Math.min(Integer.MAX_VALUE, config.publishing().confirmTimeout().toMillis()));
    }

    /**
     * Publishes the batch and returns once the broker has taken responsibility for all of it. An
     * event the broker returned as unroutable (no queue bound for it), or whose exchange it refuses, is
     * parked in {@value Topology#RELAY_PARKING_QUEUE}, confirmed too, with the reason: it neither blocks
     * the events behind it nor is dropped. Its aggregate is held ({@link HeldAggregates}): the aggregate's
     * later events are parked behind it, not sent, until a republish sends them all on in order.
     *
     * @return the events that were parked
     */
    List<BatchConfirms.Returned> publish(List<OutboundMessage> batch) throws PublishFailedException, InterruptedException {
        if (batch.isEmpty()) {
            return List.of();
        }
        lock.lockInterruptibly();
        try {
            List<BatchConfirms.Returned> undeliverable = sendHolding(batch, held.heldAmong(batch));
            if (!undeliverable.isEmpty()) {
                held.aboutToPark();
                park(undeliverable);
                held.parked(undeliverable);
            }
            held.commit();
            blocked = null;
            return undeliverable;
        } catch (IOException | TimeoutException | RuntimeException e) {
            held.rollback();
            // AlreadyClosedException and ShutdownSignalException are runtime exceptions: the channel is gone.
            throw failed(e);
        } catch (SQLException e) {
            held.rollback();
            throw new PublishFailedException("the relay's database did not record the aggregates held behind parked events", e);
        } catch (PublishFailedException e) {
            held.rollback();
            discardConnection(); // a timeout, a nack or a lost channel: start the next attempt on a fresh one
            throw e;
        } catch (InterruptedException e) {
            held.rollback();
            discardConnection(); // confirms may be outstanding: this channel must not carry another batch
            throw e;
        } catch (Error e) {
            held.rollback();
            discardConnection();
            throw e;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Sends the messages on, each aggregate's events in rounds (its first event in the first round, its
     * second in the second, …), each round confirmed before the next: an event that comes back (unroutable,
     * refused) holds its aggregate, so its later events in the same call are not sent either, whatever the
     * routing does in between (a binding made between two publishes). Events of an aggregate in
     * {@code holding} are not sent at all. Only a call with an aggregate twice pays a second round trip.
     *
     * @param holding the aggregates held, each with why; an aggregate whose event came back is added
     * @return what is to be parked, in the order of {@code messages}
     */
    private List<BatchConfirms.Returned> sendHolding(List<OutboundMessage> messages, Map<HeldAggregates.Key, String> holding)
            throws IOException, TimeoutException, InterruptedException, PublishFailedException {
        List<BatchConfirms.Returned> heldBack = new ArrayList<>();
        List<BatchConfirms.Returned> returned = new ArrayList<>();
        for (List<OutboundMessage> round : rounds(messages)) {
            List<OutboundMessage> free = new ArrayList<>(round.size());
            for (OutboundMessage message : round) {
                HeldAggregates.Key key = HeldAggregates.Key.of(message); // null for a malformed row: never held
                String behind = key == null ? null : holding.get(key);
                if (behind != null) {
                    heldBack.add(new BatchConfirms.Returned(message, behind));
                } else {
                    free.add(message);
                }
            }
            for (BatchConfirms.Returned back : deliver(free)) {
                returned.add(back);
                HeldAggregates.Key key = HeldAggregates.Key.of(back.message());
                if (key != null) {
                    holding.putIfAbsent(key, "held back behind parked event " + back.message().eventId()
                            + " of the same aggregate (" + back.reason() + "); POST /parked/republish sends them on in order");
                }
            }
        }
        if (!heldBack.isEmpty()) {
            OutboundMessage first = heldBack.get(0).message();
            Log.warnf("%d event(s) held back behind parked events of their aggregates, parked behind them (first: %s of %s);"
                    + " POST /parked/republish sends them on in order", heldBack.size(), first.eventId(), HeldAggregates.Key.of(first));
        }
        return inOrder(messages, heldBack, returned);
    }

    /** The messages in rounds: round k holds the k-th message of each aggregate, in their order; malformed rows go in the first. */
    private static List<List<OutboundMessage>> rounds(List<OutboundMessage> messages) {
        List<List<OutboundMessage>> rounds = new ArrayList<>();
        Map<HeldAggregates.Key, Integer> seen = new HashMap<>();
        for (OutboundMessage message : messages) {
            HeldAggregates.Key key = HeldAggregates.Key.of(message);
            int round = key == null ? 0 : seen.merge(key, 1, Integer::sum) - 1;
            while (rounds.size() <= round) {
                rounds.add(new ArrayList<>());
            }
            rounds.get(round).add(message);
        }
        return rounds;
    }

    /** The parked in the order of the messages (the parking queue keeps each aggregate's events in the order they were written). */
    private static List<BatchConfirms.Returned> inOrder(List<OutboundMessage> messages, List<BatchConfirms.Returned> heldBack,
                                                        List<BatchConfirms.Returned> returned) {
        Map<OutboundMessage, Integer> position = new IdentityHashMap<>();
        for (int i = 0; i < messages.size(); i++) {
            position.put(messages.get(i), i);
        }
        List<BatchConfirms.Returned> all = new ArrayList<>(heldBack);
        all.addAll(returned);
        all.sort(Comparator.comparingInt(r -> position.getOrDefault(r.message(), Integer.MAX_VALUE)));
        return all;
    }

    /**
     * Sends every parked event back to where it was first published, a chunk at a time. Each one sent
     * on is acked off the parking queue only after the broker confirmed it where it belongs. One still
     * unroutable or refused is written back to the parking queue as a fresh, confirmed copy with the
     * new reason, and only then is the old copy acked: never handed back with a requeue, which counts
     * toward a quorum queue's delivery limit (on RabbitMQ 4.x every queue has one, 20 by default). An
     * aggregate one of whose events stays parked keeps its later events parked behind it, in order
     * ({@link HeldAggregates}); one all of whose parked events went on is released. A malformed row's
     * copy stays parked: it cannot be sent as it is. No batch parks, and no other republish runs, on any
     * instance meanwhile (the held aggregates' lock).
     */
    Republished republishParked() throws PublishFailedException, InterruptedException {
        lock.lockInterruptibly();
        // Taken from the parking queue and not yet acked: if the republish fails, they go back with the connection.
        boolean inHand = false;
        try {
            // A channel of its own for taking and acking (a refusal that closes a publishing channel leaves it
            // open), kept open after the republish. Closed at once, it handed back part of what it had just acked:
            // a quorum queue (RabbitMQ 3.10) applies the acks of basic.get deliveries after the channel's end has
            // returned them (200 taken and acked, 33 settled), so stale copies of events already sent on stayed
            // parked (chaos seed 11: 293; BrokerRefusalIT). Kept open, every ack is settled.
            Channel taker = parkedTaker();
            held.republishing();
            // Read before anything is taken: an aggregate whose row moves meanwhile stays held.
            Map<HeldAggregates.Key, Long> heldBefore = held.versions();
            long waiting = taker.messageCount(Topology.RELAY_PARKING_QUEUE);
            List<String> sent = new ArrayList<>();
            List<BatchConfirms.Returned> stillParked = new ArrayList<>();
            // The aggregates one of whose events stays parked: their later ones stay parked behind it, in order.
            Map<HeldAggregates.Key, String> stillHeld = new HashMap<>();
            Set<HeldAggregates.Key> sentOn = new HashSet<>();
            long taken = 0;
            while (taken < waiting) {
                List<GetResponse> chunk = new ArrayList<>();
                for (GetResponse parked; taken < waiting && chunk.size() < REPUBLISH_CHUNK
                        && (parked = taker.basicGet(Topology.RELAY_PARKING_QUEUE, false)) != null; taken++) {
                    chunk.add(parked);
                    inHand = true;
                }
                if (chunk.isEmpty()) {
                    break;
                }
                List<OutboundMessage> unparked = new ArrayList<>();
                List<BatchConfirms.Returned> malformed = new ArrayList<>();
                for (GetResponse g : chunk) {
                    OutboundMessage message = OutboundMessage.unparked(g.getProps(), g.getBody());
                    if (message.properties().getHeaders().containsKey(OutboundMessage.MALFORMED)) {
                        malformed.add(new BatchConfirms.Returned(message, "malformed outbox row, not sent on: "
                                + message.properties().getHeaders().get(OutboundMessage.MALFORMED)));
                    } else {
                        unparked.add(message);
                    }
                }
                List<BatchConfirms.Returned> stuck = new ArrayList<>(malformed);
                stuck.addAll(sendHolding(unparked, stillHeld));
                park(stuck);
                held.parked(stuck);
                taker.basicAck(chunk.get(chunk.size() - 1).getEnvelope().getDeliveryTag(), true);
                inHand = false;
                Set<OutboundMessage> stuckMessages = Collections.newSetFromMap(new IdentityHashMap<>());
                stuck.forEach(r -> stuckMessages.add(r.message()));
                for (OutboundMessage message : unparked) {
                    if (!stuckMessages.contains(message)) {
                        sent.add(message.eventId());
                        HeldAggregates.Key key = HeldAggregates.Key.of(message);
                        if (key != null) {
                            sentOn.add(key);
                        }
                    }
                }
                stillParked.addAll(stuck);
            }
            // Having taken every parked event there was (no instance parks while this runs), an aggregate none of
            // whose events stays parked is released, whether one of them was sent now or none was left (a hold that
            // outlived its events: a relay that died between its acks and its release). Else only those sent now.
            Set<HeldAggregates.Key> release = new HashSet<>(taken >= waiting ? heldBefore.keySet() : sentOn);
            release.removeAll(stillHeld.keySet());
            held.released(heldBefore, release);
            held.commit();
            blocked = null;
            return new Republished(sent, stillParked);
        } catch (IOException | TimeoutException | RuntimeException e) {
            held.rollback();
            throw failed(e); // unacked parked copies go back to their queue with the connection
        } catch (SQLException e) {
            held.rollback();
            // What was sent on and acked stays so, its aggregates held until a republish records them released. A
            // chunk in hand goes back with the connection (copies: sent again, the inbox absorbs them); with none in
            // hand the connection stays, since closing a channel right after its acks would hand back acked copies.
            if (inHand) {
                discardConnection();
            }
            throw new PublishFailedException("the relay's database did not record the held aggregates", e);
        } catch (PublishFailedException | InterruptedException e) {
            held.rollback();
            discardConnection();
            throw e;
        } catch (Error e) {
            held.rollback();
            discardConnection(); // what was taken must not stay unacked on a channel a later ack would clear
            throw e;
        } finally {
            lock.unlock();
        }
    }

    private Channel parkedTaker() throws IOException, TimeoutException {
        Connection current = connection();
        if (parkedTaker == null || !parkedTaker.isOpen() || parkedTaker.getConnection() != current) {
            parkedTaker = openChannel(current);
        }
        return parkedTaker;
    }

    /** What {@link #republishParked()} did: the events sent on, and those still parked, each with why. */
    record Republished(List<String> sent, List<BatchConfirms.Returned> stillParked) {
    }

    /** Events waiting in the parking queue; asked on a channel of its own, without waiting for a batch in progress. */
    long parkedCount() throws IOException, TimeoutException, InterruptedException {
        Connection current = connection;
        if (current == null || !current.isOpen()) {
            if (!lock.tryLock(2, TimeUnit.SECONDS)) {
                throw new IOException("not connected, and a publish in progress holds the connection");
            }
            try {
                current = connection();
            } finally {
                lock.unlock();
            }
        }
        Channel asking = openChannel(current);
        try {
            return asking.messageCount(Topology.RELAY_PARKING_QUEUE);
        } finally {
            closeQuietly(asking);
        }
    }

    boolean isConnected() {
        Connection current = connection;
        return current != null && current.isOpen();
    }

    /**
     * Opens the connection if there is none and nobody is using the broker now; readiness uses this to
     * see the broker. It never waits: while a batch holds the lock, the state is what that batch finds.
     * @return whether a connection is open now
     */
    boolean connectIfIdle() {
        if (lock.tryLock()) {
            try {
                connection();
            } catch (IOException | TimeoutException | RuntimeException e) {
                Log.debugf("Broker not reachable: %s", e.toString());
            } finally {
                lock.unlock();
            }
        }
        return isConnected();
    }

    /** The broker as the relay last saw it: connected, blocked by an alarm, refused, or unreachable, and why. */
    String brokerState() {
        String blockedBy = blocked;
        if (blockedBy != null) {
            return "blocked: the broker stopped reading what the relay publishes (" + blockedBy + "); it resumes when the alarm clears";
        }
        if (isConnected()) {
            return "connected";
        }
        String failure = connectFailure;
        return failure != null ? failure : "not connected";
    }

    /** Why the broker blocks publishing (a resource alarm), or null. */
    String blocked() {
        return blocked;
    }

    /** Exchanges the broker refused the last time the relay tried them, with its words. */
    Map<String, String> refusals() {
        return Map.copyOf(refusals);
    }

    /**
     * Ends whatever publish is in progress, from any thread, without the lock: for a stop while a broker
     * alarm blocks publishing. The batch fails uncommitted and is published again on the next start.
     */
    void abortPublishing() {
        Connection current = connection;
        if (current != null) {
            current.abort(2_000);
        }
    }

    /**
     * Sends the messages to their exchanges, each exchange's on a channel of its own, all in flight
     * together; the ones that cannot go (returned as unroutable, or their exchange refused) come back
     * with the reason, for the caller to park. A refusal closes only its exchange's channel: the other
     * exchanges' messages and confirms are untouched, and of the refused exchange's, those the broker
     * had confirmed before it said no are in a queue, the rest are parked. An exchange deleted since it
     * was declared (404) is declared again and its unconfirmed messages sent once more.
     */
    private List<BatchConfirms.Returned> deliver(List<OutboundMessage> messages)
            throws IOException, TimeoutException, InterruptedException, PublishFailedException {
        Map<String, List<OutboundMessage>> pending = new LinkedHashMap<>();
        messages.forEach(m -> pending.computeIfAbsent(m.exchange(), exchange -> new ArrayList<>()).add(m));
        Map<String, String> refused = new LinkedHashMap<>();
        Set<String> delivered = new HashSet<>();
        List<BatchConfirms.Returned> undeliverable = new ArrayList<>();
        for (int attempt = 1; !pending.isEmpty(); attempt++) {
            Map<String, BatchConfirms> inFlight = new LinkedHashMap<>();
            for (Map.Entry<String, List<OutboundMessage>> group : pending.entrySet()) {
                String exchange = group.getKey();
                BrokerRefusal refusal = declaredExchanges.contains(exchange) ? null : declare(exchange);
                if (refusal != null) {
                    refused.put(exchange, refusal.text());
                    group.getValue().forEach(m -> undeliverable.add(refusedReturn(m, refusal)));
                    continue;
                }
                BatchConfirms confirms = new BatchConfirms(config.confirmWindow());
                inFlight.put(exchange, confirms);
                publishAll(channelFor(exchange), confirms, group.getValue());
            }
            Map<String, List<OutboundMessage>> again = new LinkedHashMap<>();
            for (Map.Entry<String, BatchConfirms> sent : inFlight.entrySet()) {
                String exchange = sent.getKey();
                BatchConfirms confirms = sent.getValue();
                try {
                    undeliverable.addAll(awaitConfirms(exchange, confirms));
                    delivered.add(exchange);
                } catch (PublishFailedException e) {
                    BrokerRefusal refusal = e.refusal();
                    if (refusal == null) {
                        throw e; // not this exchange's fault: an outage, the whole batch waits
                    }
                    discardChannel(exchange);
                    undeliverable.addAll(confirms.returnedSoFar());
                    List<OutboundMessage> unconfirmed = pending.get(exchange).stream().filter(m -> !confirms.acked(m)).toList();
                    if (refusal.code() == com.rabbitmq.client.AMQP.NOT_FOUND && attempt == 1) {
                        Log.warnf("Exchange %s was deleted since the relay declared it (%s); declaring it again", exchange, refusal);
                        declaredExchanges.remove(exchange);
                        again.put(exchange, unconfirmed);
                    } else {
                        Log.errorf("The broker refuses publishing to exchange %s (%s); its events are parked in %s",
                                exchange, refusal, Topology.RELAY_PARKING_QUEUE);
                        refused.put(exchange, refusal.text());
                        unconfirmed.forEach(m -> undeliverable.add(refusedReturn(m, refusal)));
                    }
                }
            }
            pending.clear();
            pending.putAll(again);
        }
        refusals.putAll(refused);
        delivered.stream().filter(exchange -> !refused.containsKey(exchange)).forEach(refusals::remove);
        return undeliverable;
    }

    private static BatchConfirms.Returned refusedReturn(OutboundMessage message, BrokerRefusal refusal) {
        return new BatchConfirms.Returned(message, "refused by the broker: " + refusal.text(), true);
    }

    /** The undeliverable into the parking queue, confirmed; a failure here fails the whole batch, to be retried. */
    private void park(List<BatchConfirms.Returned> undeliverable)
            throws IOException, TimeoutException, InterruptedException, PublishFailedException {
        if (undeliverable.isEmpty()) {
            return;
        }
        List<OutboundMessage> copies = undeliverable.stream().map(r -> r.message().parked(r.reason())).toList();
        BatchConfirms confirms = new BatchConfirms(config.confirmWindow());
        publishAll(channelFor(Topology.RELAY_PARKING_EXCHANGE), confirms, copies);
        if (!awaitConfirms(Topology.RELAY_PARKING_EXCHANGE, confirms).isEmpty()) {
            throw new PublishFailedException("undeliverable events could not be parked either: "
                    + Topology.RELAY_PARKING_EXCHANGE + " routes to no queue");
        }
    }

    /** Publishes on the channel, which reports to {@code confirms} from now until {@link #awaitConfirms}. */
    private void publishAll(ConfirmChannel ch, BatchConfirms confirms, List<OutboundMessage> messages)
            throws IOException, InterruptedException, PublishFailedException {
        ch.batch = confirms;
        for (OutboundMessage message : messages) {
            if (!confirms.reserve(config.confirmTimeout())) {
                return; // the channel is gone (a refusal of an earlier message, say): awaitConfirms says why
            }
            confirms.sent(ch.channel.getNextPublishSeqNo(), message);
            try {
                ch.channel.basicPublish(message.exchange(), message.routingKey(), true, message.properties(), message.body());
            } catch (AlreadyClosedException closed) {
                confirms.channelLost(closed); // closed under us (a refusal of an earlier message, say): awaitConfirms says why
                return;
            }
        }
    }

    private List<BatchConfirms.Returned> awaitConfirms(String exchange, BatchConfirms confirms)
            throws InterruptedException, PublishFailedException {
        try {
            return confirms.awaitAll(config.confirmTimeout());
        } finally {
            ConfirmChannel ch = channels.get(exchange);
            if (ch != null && ch.batch == confirms) {
                ch.batch = null;
            }
        }
    }

    /**
     * Declares an exchange on a channel of its own, so that a refusal closes only that channel.
     * @return the refusal, or null once the exchange is declared
     */
    private BrokerRefusal declare(String exchange) throws IOException, TimeoutException {
        Channel declaring = openChannel(connection());
        try {
            // The relay owns the exchanges it publishes to: a durable topic exchange per aggregate type.
            declaring.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
            declaredExchanges.add(exchange);
            return null;
        } catch (IOException e) {
            BrokerRefusal refusal = BrokerRefusal.of(e);
            if (refusal == null) {
                throw e;
            }
            Log.errorf("The broker refuses exchange %s (%s); its events are parked in %s", exchange, refusal, Topology.RELAY_PARKING_QUEUE);
            return refusal;
        } finally {
            closeQuietly(declaring);
        }
    }

    private ConfirmChannel channelFor(String exchange) throws IOException, TimeoutException {
        ConfirmChannel open = channels.get(exchange);
        if (open != null && open.channel.isOpen()) {
            return open;
        }
        ConfirmChannel opened = new ConfirmChannel(openChannel(connection()));
        channels.put(exchange, opened);
        return opened;
    }

    private Connection connection() throws IOException, TimeoutException {
        Connection current = connection;
        if (current != null && current.isOpen()) {
            return current;
        }
        discardConnection();
        Connection opened;
        try {
            opened = factory.newConnection(connectionName);
        } catch (IOException | TimeoutException | RuntimeException e) {
            connectFailure = "unreachable: " + e;
            blocked = null;
            throw e;
        }
        try {
            opened.addBlockedListener(reason -> {
                if (connection == opened) {
                    Log.warnf("The broker blocks publishing: %s; batches wait (and are retried) until the alarm clears", reason);
                    blocked = reason;
                }
            }, () -> {
                if (connection == opened) {
                    Log.info("The broker unblocked publishing");
                    blocked = null;
                }
            });
            declareParking(opened);
        } catch (IOException | RuntimeException e) {
            // A failed start leaves nothing behind: no connection, no channel, no thread of the library's.
            opened.abort(2_000);
            BrokerRefusal refusal = BrokerRefusal.of(e);
            connectFailure = refusal != null ? "refused: the relay's parking place (" + refusal + ")" : "unreachable: " + e;
            throw e;
        }
        connection = opened;
        connectFailure = null;
        Log.infof("Connected to RabbitMQ at %s:%d as %s", factory.getHost(), factory.getPort(), factory.getUsername());
        return opened;
    }

    /** The relay's own parking place: an exchange that cannot be unroutable while its queue is bound. */
    private void declareParking(Connection opened) throws IOException {
        Channel declaring = openChannel(opened);
        try {
            declaring.exchangeDeclare(Topology.RELAY_PARKING_EXCHANGE, BuiltinExchangeType.FANOUT, true);
            declaring.queueDeclare(Topology.RELAY_PARKING_QUEUE, true, false, false, Topology.relayParkingQueueArguments());
            declaring.queueBind(Topology.RELAY_PARKING_QUEUE, Topology.RELAY_PARKING_EXCHANGE, "");
            declaredExchanges.add(Topology.RELAY_PARKING_EXCHANGE);
        } finally {
            closeQuietly(declaring);
        }
    }

    private static Channel openChannel(Connection on) throws IOException {
        Channel opened = on.createChannel();
        if (opened == null) {
            throw new IOException("the broker allows no more channels on this connection");
        }
        return opened;
    }

    /**
     * A channel's end that cannot fail the work around it: abort passes over a channel the broker already
     * closed (a refusal) or a lost connection; what it may still throw is an I/O error of a connection that
     * the next use finds closed, and reports then.
     */
    private static void closeQuietly(Channel ch) {
        try {
            ch.abort();
        } catch (IOException e) {
            Log.debugf("Closing channel %d: %s", ch.getChannelNumber(), e.toString());
        }
    }

    private PublishFailedException failed(Exception e) {
        discardConnection();
        BrokerRefusal refusal = BrokerRefusal.of(e);
        return new PublishFailedException(refusal != null ? "refused by the broker" : "broker unavailable", e);
    }

    private void discardChannel(String exchange) {
        ConfirmChannel gone = channels.remove(exchange);
        if (gone != null) {
            gone.batch = null;
            closeQuietly(gone.channel);
        }
    }

    /** Under the lock: the connection, its channels and what was declared on it go; the next use opens a fresh one. */
    private void discardConnection() {
        Connection current = connection;
        connection = null;
        parkedTaker = null; // closed with the connection: what it had taken and not acked goes back
        channels.values().forEach(ch -> ch.batch = null);
        channels.clear();
        declaredExchanges.clear();
        if (current != null) {
            current.abort(2_000);
        }
    }

    @PreDestroy
    void discard() {
        abortPublishing();
        connection = null;
    }

    /**
     * A publisher-confirm channel with listeners of its own. They report only to the batch this channel
     * carries now ({@code batch}, set for the length of one send): a confirm, return or shutdown that
     * arrives after the channel was discarded finds no batch, or one that nobody awaits any more, and
     * changes nothing. Sequence numbers are per channel, so one channel's multiple-ack cannot cover
     * another channel's messages.
     */
    private static final class ConfirmChannel {

        final Channel channel;
        volatile BatchConfirms batch;

        ConfirmChannel(Channel channel) throws IOException {
            this.channel = channel;
            try {
                channel.confirmSelect();
            } catch (IOException | RuntimeException e) {
                closeQuietly(channel);
                throw e;
            }
            channel.addConfirmListener(new ConfirmListener() {
                @Override
                public void handleAck(long deliveryTag, boolean multiple) {
                    BatchConfirms current = batch;
                    if (current != null) {
                        current.confirmed(deliveryTag, multiple, true);
                    }
                }

                @Override
                public void handleNack(long deliveryTag, boolean multiple) {
                    BatchConfirms current = batch;
                    if (current != null) {
                        current.confirmed(deliveryTag, multiple, false);
                    }
                }
            });
            channel.addReturnListener(returned -> {
                BatchConfirms current = batch;
                String messageId = returned.getProperties().getMessageId();
                Log.errorf("Unroutable: event %s (exchange %s, routing key %s): %s; parking it in %s",
                        messageId, returned.getExchange(), returned.getRoutingKey(), returned.getReplyText(),
                        Topology.RELAY_PARKING_QUEUE);
                if (current != null) {
                    current.returned(messageId, "unroutable: no queue bound to exchange " + returned.getExchange()
                            + " for routing key " + returned.getRoutingKey() + " (" + returned.getReplyText() + ")");
                }
            });
            channel.addShutdownListener(cause -> {
                BatchConfirms current = batch;
                if (current != null) {
                    current.channelLost(cause);
                }
            });
        }
    }
}
