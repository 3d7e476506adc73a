package dev.outboxinbox.relay;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ConfirmListener;
import io.quarkus.logging.Log;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
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

    synchronized void publish(List<OutboundMessage> batch) throws PublishFailedException, InterruptedException {
        if (batch.isEmpty()) {
            return;
        }
        BatchConfirms confirms = new BatchConfirms(config.confirmWindow());
        current = confirms;
        try {
            Channel ch = channel();
            for (OutboundMessage message : batch) {
                declareExchange(ch, message.exchange());
                confirms.reserve(config.confirmTimeout());
                confirms.sent(ch.getNextPublishSeqNo(), message);
                ch.basicPublish(message.exchange(), message.routingKey(), true, message.properties(), message.body());
            }
            confirms.awaitAll(config.confirmTimeout());
        } catch (IOException | TimeoutException | RuntimeException e) {
            // AlreadyClosedException and ShutdownSignalException are runtime exceptions: the channel is gone.
            discard();
            throw new PublishFailedException("broker unavailable", e);
        } catch (PublishFailedException e) {
            if (e.unroutable().isEmpty()) {
                discard(); // a timeout or a lost channel: start the next attempt on a fresh one
            }
            throw e;
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
            Log.errorf("Unroutable: event %s (exchange %s, routing key %s): %s; not committing, will retry",
                    messageId, returned.getExchange(), returned.getRoutingKey(), returned.getReplyText());
            if (batch != null) {
                batch.returned(messageId, returned.getExchange(), returned.getRoutingKey(), returned.getReplyText());
            }
        });
        channel.addShutdownListener(cause -> {
            BatchConfirms batch = current;
            if (batch != null) {
                batch.channelLost(cause.getMessage());
            }
        });
        declaredExchanges.clear();
        Log.infof("Connected to RabbitMQ at %s:%d as %s", factory.getHost(), factory.getPort(), factory.getUsername());
        return channel;
    }

    /** The relay owns the exchanges it publishes to: a durable topic exchange per aggregate type. */
    private void declareExchange(Channel ch, String exchange) throws IOException {
        if (declaredExchanges.add(exchange)) {
            ch.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
        }
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
