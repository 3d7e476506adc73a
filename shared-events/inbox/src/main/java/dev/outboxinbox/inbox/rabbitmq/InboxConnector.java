package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.ChannelSink;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxLookahead;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.IncomingChannels;
import io.smallrye.reactive.messaging.connector.InboundConnector;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import java.lang.reflect.Method;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.spi.Connector;

/**
 * A SmallRye Reactive Messaging connector on this library's own RabbitMQ transport
 * ({@link InboxConsumer}: its supervisor, recovery, envelope checks and dead letters), for a service
 * that handles its messages with {@code @Incoming} and the {@link dev.outboxinbox.inbox.Inbox} around
 * it. Each channel bound to it is a stream of its own: its queue, exchange, routing keys, dead letters
 * and partitions are the channel's attributes ({@link ChannelSettings#ofChannel}), its inbox key and
 * metrics are its consumer name's:
 *
 * <pre>
 * mp.messaging.incoming.inventory-replies.connector=inbox-rabbitmq
 * mp.messaging.incoming.inventory-replies.queue=order.inventory-replies
 * mp.messaging.incoming.inventory-replies.exchange=inventory
 * mp.messaging.incoming.inventory-replies.routing-keys=InventoryReserved,InventoryRejected
 * </pre>
 *
 * Why not SmallRye's own RabbitMQ connector: after a broker restart under load it failed its stream
 * for good ("BackPressureFailure: Queue is full", smallrye-reactive-messaging#1906), which
 * deploy/chaos found. This one hands SmallRye an unbounded buffer bounded in fact by the prefetch,
 * and its connection dies and comes back underneath a stream that never ends.
 */
@ApplicationScoped
@Connector(InboxConnector.NAME)
public class InboxConnector implements InboundConnector {

    public static final String NAME = "inbox-rabbitmq";

    private final InboxConsumers consumers;
    private final InboxHandler inbox;
    private final InboxMetrics metrics;
    private final InboxConfig config;
    private final Instance<InboxLookahead<?>> lookaheads;
    private final List<ChannelSink> sinks = new CopyOnWriteArrayList<>();

    InboxConnector(InboxConsumers consumers, InboxHandler inbox, InboxMetrics metrics, InboxConfig config,
                   @Any Instance<InboxLookahead<?>> lookaheads) {
        this.consumers = consumers;
        this.lookaheads = lookaheads;
        this.inbox = inbox;
        this.metrics = metrics;
        this.config = config;
    }

    @Override
    public Flow.Publisher<? extends Message<?>> getPublisher(Config channelConfig) {
        String name = channelConfig.getValue(CHANNEL_NAME_ATTRIBUTE, String.class);
        ChannelSettings settings = ChannelSettings.ofChannel(name, channelConfig, config);
        InboxConsumer consumer = consumers.openChannel(settings);
        ChannelSink sink = ChannelSink.of(inbox, lookaheadOf(name), metrics, settings, config);
        sinks.add(sink);
        return sink.messages(() -> consumer.begin(sink));
    }

    /**
     * The bean whose {@code @Incoming @Inbox} method reads {@code channel}, if it looks ahead
     * ({@link InboxLookahead}; {@code InboxMethods} refuses a look beside methods of several channels, whose
     * payloads it could not all take).
     */
    private InboxLookahead<?> lookaheadOf(String channel) {
        for (Instance.Handle<InboxLookahead<?>> handle : lookaheads.handles()) {
            for (Method method : handle.getBean().getBeanClass().getDeclaredMethods()) {
                boolean reads = IncomingChannels.of(method).contains(channel);
                if (reads && method.isAnnotationPresent(Inbox.class)) {
                    return handle.get();
                }
            }
        }
        return null;
    }

    @PreDestroy
    void close() {
        sinks.forEach(ChannelSink::close);
    }
}
