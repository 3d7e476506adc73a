package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.outboxinbox.inbox.ChannelSettings;
import io.quarkus.logging.Log;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One connection's life for one consumed stream: a consuming channel per queue read (the queue, or
 * each partition this instance holds), each delivery handed to the {@link Settlement}, and the end of
 * it noticed (the connection or a consuming channel closed, the broker cancelling a consumer) so that
 * the supervisor ({@link InboxConsumer}) starts over. A partition's channel is cancelled and closed
 * from the supervisor's thread, once nothing of it is left to ack.
 */
final class ConsumerSession implements AutoCloseable {

    private final ChannelSettings settings;
    private final Connection connection;
    private final Map<String, Subscription> subscriptions = new ConcurrentHashMap<>();
    private final Settlement settlement;
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile String closedBecause;
    private volatile boolean cancelled;
    /** Set before this session closes its own connection: the channels' closes that follow are expected. */
    private volatile boolean closing;

    /** Takes the connection over: from here on {@link #close()} closes it, whatever fails. */
    ConsumerSession(InboxConsumer consumer, Connection connection) {
        this.settings = consumer.settings;
        this.connection = connection;
        connection.addShutdownListener(cause -> {
            if (!closing) {
                closed("the connection closed: " + BrokerErrors.describe(cause));
            }
        });
        this.settlement = new Settlement(consumer, this, connection);
    }

    /** Declares the topology; a refusal closes only the declaring channel, and {@link #close()} the rest. */
    void declare() throws IOException {
        try (Channel declaring = connection.createChannel()) {
            TopologyDeclarer.declare(declaring, settings);
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
        channel.basicQos(settings.prefetch());
        subscriptions.put(queue, subscription);
        subscription.tag = channel.basicConsume(queue, false, settings.consumer(), new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
                Delivery delivery = new Delivery(subscription, envelope, properties, body);
                try {
                    settlement.receive(delivery);
                } catch (Throwable e) {
                    // Never out of this callback: the client would close the channel, and this queue would stop being read.
                    Log.errorf(e, "Message %s could not be taken in; it goes back to the queue", properties.getMessageId());
                    settlement.nack(delivery);
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
    String awaitClosed(CountDownLatch stopping, PartitionShareOut shareOut) throws InterruptedException {
        long nextBeat = System.nanoTime();
        while (true) {
            if (shareOut != null && System.nanoTime() - nextBeat >= 0) {
                if (cancelled) {
                    shareOut.keepLocksWhileDraining();
                } else {
                    shareOut.rebalance(this);
                }
                nextBeat = System.nanoTime() + shareOut.heartbeat().toNanos();
            }
            if (closed.await(shareOut == null ? 200 : 100, TimeUnit.MILLISECONDS)) {
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


    /** Whether {@code from} is still read by this session: not given up, not cancelled, its channel open. */
    boolean stillReads(Subscription from) {
        return !from.closing && !closing && !cancelled && subscriptions.get(from.queue) == from && from.channel.isOpen();
    }

    /** The queues paused behind a held message: queue → what is held, since when, why. */
    Map<String, String> held() {
        return settlement.held(subscriptions.values());
    }

    @Override
    public void close() {
        closing = true;
        settlement.close();
        try {
            if (connection.isOpen()) {
                connection.close(5_000);
            }
        } catch (Exception e) {
            Log.debugf("closing the connection: %s", e);
        }
    }
}
