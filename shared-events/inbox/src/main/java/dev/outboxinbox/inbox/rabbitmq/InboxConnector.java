package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.ChannelSink;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxMetrics;
import io.smallrye.reactive.messaging.connector.InboundConnector;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.StreamSupport;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.spi.Connector;

/**
 * A SmallRye Reactive Messaging connector on this library's own RabbitMQ transport
 * ({@link InboxConsumer}: its supervisor, recovery, envelope checks and dead letters), for a service
 * that handles its messages with {@code @Incoming} and the {@link dev.outboxinbox.inbox.Inbox} around it:
 *
 * <pre>
 * mp.messaging.incoming.inventory-replies.connector=inbox-rabbitmq
 * inbox.queue=order.inventory-replies   # and the rest of inbox.*: the queue, its exchange, routing keys
 * </pre>
 *
 * Why not SmallRye's own RabbitMQ connector: after a broker restart under load it failed its stream
 * for good ("BackPressureFailure: Queue is full", smallrye-reactive-messaging#1906), which
 * deploy/chaos found. This one hands SmallRye an unbounded buffer bounded in fact by the prefetch,
 * and its connection dies and comes back underneath a stream that never ends.
 *
 * <p>One inbox channel per service: the queue and the rest come from {@code inbox.*}, not from the
 * channel's attributes.
 */
@ApplicationScoped
@Connector(InboxConnector.NAME)
public class InboxConnector implements InboundConnector {

    public static final String NAME = "inbox-rabbitmq";

    private final InboxConsumer consumer;
    private final InboxHandler inbox;
    private final InboxMetrics metrics;
    private final InboxConfig config;
    private final AtomicReference<String> channel = new AtomicReference<>();
    private volatile ChannelSink sink;

    InboxConnector(InboxConsumer consumer, InboxHandler inbox, InboxMetrics metrics, InboxConfig config) {
        this.consumer = consumer;
        this.inbox = inbox;
        this.metrics = metrics;
        this.config = config;
    }

    @Override
    public Flow.Publisher<? extends Message<?>> getPublisher(Config channelConfig) {
        String name = channelConfig.getValue(CHANNEL_NAME_ATTRIBUTE, String.class);
        if (!channel.compareAndSet(null, name)) {
            throw new IllegalStateException("channels " + channel.get() + " and " + name + " are both bound to " + NAME
                    + ": a service has one inbox channel (its queue is inbox.queue)");
        }
        ChannelSink created = ChannelSink.of(inbox, metrics, config);
        sink = created;
        return created.messages(() -> consumer.begin(created));
    }

    /** Whether a channel of this service is bound to this connector (then that channel consumes, not a BatchEffects). */
    static boolean bound(Config config) {
        return StreamSupport.stream(config.getPropertyNames().spliterator(), false)
                .filter(key -> key.startsWith("mp.messaging.incoming.") && key.endsWith(".connector"))
                .anyMatch(key -> NAME.equals(config.getOptionalValue(key, String.class).orElse(null)));
    }

    @PreDestroy
    void close() {
        ChannelSink current = sink;
        if (current != null) {
            current.close();
        }
    }
}
