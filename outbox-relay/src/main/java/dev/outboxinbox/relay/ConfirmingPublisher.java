package dev.outboxinbox.relay;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Topology;
import io.quarkus.logging.Log;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * Publishes a batch to RabbitMQ persistent, {@code mandatory} and publisher-confirmed, with many
 * confirms in flight at once, and reports success only when the broker has taken responsibility
 * for every message of it.
 *
 * <p>The client's automatic recovery is off on purpose: confirms outstanding on a lost channel
 * can never arrive, so a lost connection fails the batch (to be republished whole) and the next
 * batch opens a fresh connection.
 */
@ApplicationScoped
class ConfirmingPublisher {

    private final ConnectionFactory factory;
    private final RelayConfig.Publishing config;
    private final String connectionName;
    private final Set<String> declaredExchanges = new HashSet<>();
    private Connection connection;
    private Channel channel;
    private volatile BatchConfirms current;

    ConfirmingPublisher(RelayConfig config) {
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
    }

    /**
     * Publishes the batch and returns once the broker has taken responsibility for all of it. An
     * event the broker returned as unroutable (no queue bound for it) is parked in
     * {@value Topology#RELAY_PARKING_QUEUE}, confirmed too, with the reason: it neither blocks the
     * events behind it nor is dropped.
     *
     * @return the events that were parked
     */
    synchronized List<BatchConfirms.Returned> publish(List<OutboundMessage> batch) throws PublishFailedException, InterruptedException {
        if (batch.isEmpty()) {
            return List.of();
        }
        try {
            Channel ch = channel();
            List<BatchConfirms.Returned> returned = send(ch, batch);
            if (!returned.isEmpty()) {
                List<OutboundMessage> parked = returned.stream().map(r -> r.message().parked(r.reason())).toList();
                if (!send(ch, parked).isEmpty()) {
                    throw new PublishFailedException("unroutable events could not be parked either: "
                            + Topology.RELAY_PARKING_EXCHANGE + " routes to no queue");
                }
            }
            return returned;
        } catch (IOException | TimeoutException | RuntimeException e) {
            // AlreadyClosedException and ShutdownSignalException are runtime exceptions: the channel is gone.
            discard();
            throw new PublishFailedException("broker unavailable", e);
        } catch (PublishFailedException e) {
            discard(); // a timeout, a nack or a lost channel: start the next attempt on a fresh one
            throw e;
        }
    }

    /**
     * Moves every event now parked back to where it was first published, one confirmed batch. An
     * event still unroutable stays parked; each one sent on is acked off the parking queue only
     * after the broker confirmed it where it belongs.
     */
    synchronized Republished republishParked() throws PublishFailedException, InterruptedException {
        try {
            Channel ch = channel();
            long waiting = ch.messageCount(Topology.RELAY_PARKING_QUEUE);
            List<GetResponse> taken = new ArrayList<>();
            for (GetResponse parked; taken.size() < waiting && (parked = ch.basicGet(Topology.RELAY_PARKING_QUEUE, false)) != null; ) {
                taken.add(parked);
            }
            List<BatchConfirms.Returned> stillUnroutable = send(ch,
                    taken.stream().map(g -> OutboundMessage.unparked(g.getProps(), g.getBody())).toList());
            List<String> kept = stillUnroutable.stream().map(r -> r.message().eventId()).toList();
            for (GetResponse parked : taken) {
                if (kept.contains(parked.getProps().getMessageId())) {
                    ch.basicNack(parked.getEnvelope().getDeliveryTag(), false, true);
                } else {
                    ch.basicAck(parked.getEnvelope().getDeliveryTag(), false);
                }
            }
            return new Republished(taken.size() - kept.size(), kept);
        } catch (IOException | TimeoutException | RuntimeException e) {
            discard(); // unacked parked copies go back to their queue with the channel
            throw new PublishFailedException("broker unavailable", e);
        } catch (PublishFailedException e) {
            discard();
            throw e;
        }
    }

    /** What {@link #republishParked()} did: how many went on, and the ids that are still unroutable. */
    record Republished(int republished, List<String> stillParked) {
    }

    synchronized long parkedCount() throws IOException, TimeoutException {
        return channel().messageCount(Topology.RELAY_PARKING_QUEUE);
    }

    private List<BatchConfirms.Returned> send(Channel ch, List<OutboundMessage> messages)
            throws IOException, InterruptedException, PublishFailedException {
        BatchConfirms confirms = new BatchConfirms(config.confirmWindow());
        current = confirms;
        try {
            for (OutboundMessage message : messages) {
                declareExchange(ch, message.exchange());
                confirms.reserve(config.confirmTimeout());
                confirms.sent(ch.getNextPublishSeqNo(), message);
                ch.basicPublish(message.exchange(), message.routingKey(), true, message.properties(), message.body());
            }
            return confirms.awaitAll(config.confirmTimeout());
        } finally {
            current = null;
        }
    }

    synchronized boolean isConnected() {
        return connection != null && connection.isOpen();
    }

    /** Opens the connection if there is none; the relay's readiness uses this to see the broker. */
    synchronized void connect() throws IOException, TimeoutException {
        channel();
    }

    private Channel channel() throws IOException, TimeoutException {
        if (channel != null && channel.isOpen()) {
            return channel;
        }
        discard();
        connection = factory.newConnection(connectionName);
        channel = connection.createChannel();
        channel.confirmSelect();
        channel.addConfirmListener(new ConfirmListener() {
            @Override
            public void handleAck(long deliveryTag, boolean multiple) {
                BatchConfirms batch = current;
                if (batch != null) {
                    batch.confirmed(deliveryTag, multiple, true);
                }
            }

            @Override
            public void handleNack(long deliveryTag, boolean multiple) {
                BatchConfirms batch = current;
                if (batch != null) {
                    batch.confirmed(deliveryTag, multiple, false);
                }
            }
        });
        channel.addReturnListener(returned -> {
            BatchConfirms batch = current;
            String messageId = returned.getProperties().getMessageId();
            Log.errorf("Unroutable: event %s (exchange %s, routing key %s): %s; parking it in %s",
                    messageId, returned.getExchange(), returned.getRoutingKey(), returned.getReplyText(),
                    Topology.RELAY_PARKING_QUEUE);
            if (batch != null) {
                batch.returned(messageId, "unroutable: no queue bound to exchange " + returned.getExchange()
                        + " for routing key " + returned.getRoutingKey() + " (" + returned.getReplyText() + ")");
            }
        });
        channel.addShutdownListener(cause -> {
            BatchConfirms batch = current;
            if (batch != null) {
                batch.channelLost(cause.getMessage());
            }
        });
        declaredExchanges.clear();
        declareParking(channel);
        Log.infof("Connected to RabbitMQ at %s:%d as %s", factory.getHost(), factory.getPort(), factory.getUsername());
        return channel;
    }

    /** The relay owns the exchanges it publishes to: a durable topic exchange per aggregate type. */
    private void declareExchange(Channel ch, String exchange) throws IOException {
        if (declaredExchanges.add(exchange)) {
            ch.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
        }
    }

    /** The relay's own parking place: an exchange that cannot be unroutable while its queue is bound. */
    private void declareParking(Channel ch) throws IOException {
        ch.exchangeDeclare(Topology.RELAY_PARKING_EXCHANGE, BuiltinExchangeType.FANOUT, true);
        ch.queueDeclare(Topology.RELAY_PARKING_QUEUE, true, false, false, Topology.relayParkingQueueArguments());
        ch.queueBind(Topology.RELAY_PARKING_QUEUE, Topology.RELAY_PARKING_EXCHANGE, "");
        declaredExchanges.add(Topology.RELAY_PARKING_EXCHANGE);
    }

    @PreDestroy
    synchronized void discard() {
        if (connection != null) {
            try {
                connection.abort(2_000);
            } finally {
                connection = null;
                channel = null;
            }
        }
    }
}
