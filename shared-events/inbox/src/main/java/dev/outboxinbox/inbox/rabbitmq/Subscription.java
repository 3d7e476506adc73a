package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.Channel;
import io.quarkus.logging.Log;
import java.util.concurrent.atomic.AtomicInteger;

/** One queue read on one channel: its deliveries are acked on that channel, and counted until they are. */
final class Subscription {

    final String queue;
    final Channel channel;
    final AtomicInteger inFlight = new AtomicInteger();
    volatile String tag;
    /** Set when this instance stops reading the queue on purpose: the cancel and close that follow are expected. */
    volatile boolean closing;
    /** Why a message of this queue is held ({@link Settlement#hold}): nothing behind it is read. Null normally. */
    volatile String held;
    /** The held message, since when, why: what readiness shows. */
    volatile String heldWhat;

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
