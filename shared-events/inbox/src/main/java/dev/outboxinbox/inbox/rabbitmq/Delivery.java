package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import java.util.concurrent.atomic.AtomicBoolean;

/** One message in hand, settled once: acked, requeued, or parked and then acked. */
final class Delivery {

    final Subscription from;
    final Envelope envelope;
    final AMQP.BasicProperties properties;
    final byte[] body;
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
