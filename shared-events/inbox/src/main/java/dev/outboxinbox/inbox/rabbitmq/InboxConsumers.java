package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.ConsumerNames;
import dev.outboxinbox.inbox.Inbox;
import dev.outboxinbox.inbox.InboxBatcher;
import dev.outboxinbox.inbox.InboxConfig;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.InboxTracing;
import dev.outboxinbox.inbox.IncomingChannels;
import dev.outboxinbox.inbox.MessageClassifier;
import dev.outboxinbox.inbox.MessageDecoder;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.common.annotation.Identifier;
import jakarta.annotation.PreDestroy;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Default;
import jakarta.enterprise.inject.Instance;
import jakarta.enterprise.inject.spi.Bean;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.interceptor.Interceptor;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.StreamSupport;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The streams this service consumes, one {@link InboxConsumer} each: one per channel bound to
 * {@link InboxConnector} (opened when SmallRye asks for the channel's publisher), or the one queue of a
 * {@link dev.outboxinbox.inbox.BatchEffects} service (opened here at start). Each has its own
 * settings, connection, decoder, metrics and dead letters; they start, stop and report readiness together.
 */
@ApplicationScoped
public class InboxConsumers {

    private final InboxHandler handler;
    private final InboxBatcher batcher;
    private final InboxMetrics metrics;
    private final InboxTracing tracing;
    private final RecentDeadLetters recentDeadLetters;
    private final BrokerSettings broker;
    private final InboxConfig config;
    private final ConsumerNames names;
    private final Instance<MessageDecoder<?>> decoders;
    /** The channels bound to this library's connector, as configured (they do not change while it runs). */
    private final List<String> channels = channels(ConfigProvider.getConfig());
    /** Channel name → its consumer, in the order they were opened. Guarded by this. */
    private final Map<String, InboxConsumer> consumers = new LinkedHashMap<>();
    private final Map<String, DeadLetterRedelivery> deadLetters = new LinkedHashMap<>();

    InboxConsumers(InboxHandler handler, InboxBatcher batcher, InboxMetrics metrics, InboxTracing tracing,
                   RecentDeadLetters recentDeadLetters, BrokerSettings broker, InboxConfig config, ConsumerNames names,
                   @Any Instance<MessageDecoder<?>> decoders) {
        this.handler = handler;
        this.batcher = batcher;
        this.metrics = metrics;
        this.tracing = tracing;
        this.recentDeadLetters = recentDeadLetters;
        this.broker = broker;
        this.config = config;
        this.names = names;
        this.decoders = decoders;
    }

    /**
     * A service applies its messages one way: channels bound to {@link InboxConnector} (each opened
     * when SmallRye asks for its publisher, which comes first, and started once SmallRye subscribed to
     * it), or a {@code BatchEffects} bean (started here).
     */
    void start(@Observes StartupEvent event, BeanManager beans) {
        List<String> unguarded = withoutInbox(beans.getBeans(Object.class, Any.Literal.INSTANCE).stream()
                .<Class<?>>map(Bean::getBeanClass).toList(), channels);
        if (!unguarded.isEmpty()) {
            throw new IllegalStateException(String.join("; ", unguarded));
        }
        if (channels.isEmpty() && !handler.appliesBatches()) {
            throw new IllegalStateException("nothing applies this service's messages: bind a channel to "
                    + InboxConnector.NAME + " (mp.messaging.incoming.<channel>.connector) and handle it with an"
                    + " @Incoming @NonBlocking @Inbox method, or implement BatchEffects");
        }
        if (channels.isEmpty()) {
            open(ChannelSettings.ofService(config)).begin(batcher);
        }
    }

    /**
     * Refused before any channel consumes: a service with both channels and a {@code BatchEffects}, or
     * with the per-stream keys of {@code inbox.*} (a BatchEffects service's) left beside its channels,
     * which would be ignored (a partitioned queue read as one, say).
     */
    private void refuseAnotherWay(ChannelSettings channel) {
        if (handler.appliesBatches()) {
            throw new IllegalStateException("both a BatchEffects bean and a channel bound to " + InboxConnector.NAME
                    + " (" + channel.channel() + "): a service applies its messages one way");
        }
        Config all = ConfigProvider.getConfig();
        List<String> left = new ArrayList<>();
        // Those with a default count only when set to something else (the mapping's default is always there).
        Map<String, String> defaults = Map.of("exchange-type", "topic", "partitioning.count", "0");
        for (String key : List.of("queue", "exchange", "exchange-type", "routing-keys", "dead-letter-queue",
                "dead-letter-exchange", "retry-exchange", "partitioning.count")) {
            all.getOptionalValue("inbox." + key, String.class).filter(value -> !value.isBlank())
                    .filter(value -> !value.trim().equals(defaults.get(key)))
                    .ifPresent(value -> left.add("inbox." + key + "=" + value));
        }
        if (!left.isEmpty()) {
            throw new IllegalStateException(left + ": these are a BatchEffects service's; this service reads channels "
                    + channels + ", each set under mp.messaging.incoming.<channel>.* (" + channel.key("queue")
                    + ", " + channel.key("partitioning.count") + ", …)");
        }
    }

    /** For the connector: the consumer of one channel, not started yet. */
    InboxConsumer openChannel(ChannelSettings settings) {
        refuseAnotherWay(settings);
        return open(settings);
    }

    private synchronized InboxConsumer open(ChannelSettings settings) {
        refuseSharing(consumers.values().stream().map(InboxConsumer::settings).toList(), settings);
        MessageClassifier classifier = MessageClassifier.of(settings, decoder(settings), metrics.consumer(settings.consumer()));
        InboxConsumer consumer = new InboxConsumer(settings, classifier, metrics.consumer(settings.consumer()), tracing,
                recentDeadLetters, broker, ConfigProvider.getConfig());
        consumers.put(settings.channel(), consumer);
        names.add(settings.consumer());
        return consumer;
    }

    /**
     * Two channels are two streams: refused when they would share a consumer name (one inbox key for two
     * handlers: the second would take every message the first had as a duplicate), or any queue or exchange
     * either declares as its own (queue, partitions, dead-letter queue and exchange, retry exchange).
     */
    static void refuseSharing(List<ChannelSettings> opened, ChannelSettings next) {
        for (ChannelSettings taken : opened) {
            if (taken.channel().equals(next.channel())) {
                throw new IllegalStateException("channel " + next.channel() + " is opened twice");
            }
            if (taken.consumer().equals(next.consumer())) {
                throw new IllegalStateException("channels " + taken.channel() + " and " + next.channel()
                        + " are both kept under the consumer name " + next.consumer() + ": give each its own ("
                        + next.key("consumer") + ")");
            }
            Set<String> shared = new TreeSet<>(owned(taken));
            shared.retainAll(owned(next));
            if (!shared.isEmpty()) {
                throw new IllegalStateException("channels " + taken.channel() + " and " + next.channel() + " both declare "
                        + shared + " as their own: each reads its own queue and dead letters (" + next.key("queue") + ", "
                        + next.key("dead-letter-queue") + ", " + next.key("dead-letter-exchange") + ", "
                        + next.key("retry-exchange") + ")");
            }
        }
    }

    /** What a channel declares as its own (names of queues and exchanges: the broker keeps them apart, this does not). */
    private static Set<String> owned(ChannelSettings channel) {
        Set<String> owned = new TreeSet<>(channel.queues());
        owned.addAll(List.of(channel.queue(), channel.deadLetterQueue(), channel.deadLetterExchange(), channel.retryExchange()));
        return owned;
    }

    /** Before the inbox stops: every stream stops taking messages, lets those in hand finish and be acked. */
    void stop(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) ShutdownEvent event) throws InterruptedException {
        List<InboxConsumer> all = all();
        all.forEach(InboxConsumer::cancel);
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (InboxConsumer consumer : all) {
            consumer.drain(deadline);
        }
        all.forEach(InboxConsumer::end);
        for (InboxConsumer consumer : all) {
            consumer.join();
        }
    }

    @PreDestroy
    synchronized void closeDeadLetters() {
        deadLetters.values().forEach(DeadLetterRedelivery::discard);
    }

    /** Every stream opened so far, in the order they were. */
    public synchronized List<InboxConsumer> all() {
        return List.copyOf(consumers.values());
    }

    /** The channels of this service bound to the inbox connector, opened or not yet. */
    List<String> expected() {
        return channels.isEmpty() ? List.of("inbox") : channels;
    }

    /** One channel's consumer ({@code inbox} for a BatchEffects service's), if it was opened. */
    public synchronized Optional<InboxConsumer> channel(String name) {
        return Optional.ofNullable(consumers.get(name));
    }

    /**
     * The dead letters of one channel; {@code channel} may be null when the service reads one stream.
     *
     * @throws IllegalArgumentException naming the channels, when there is no such channel or it must be named
     */
    public synchronized DeadLetterRedelivery deadLetters(String channel) {
        InboxConsumer consumer;
        if (channel == null || channel.isBlank()) {
            if (consumers.size() != 1) {
                throw new IllegalArgumentException(consumers.isEmpty() ? "no inbox channel is open yet"
                        : "this service reads the channels " + consumers.keySet() + ": name one (channel=…)");
            }
            consumer = consumers.values().iterator().next();
        } else {
            consumer = consumers.get(channel);
            if (consumer == null) {
                throw new IllegalArgumentException("no inbox channel '" + channel + "' here; the channels are " + consumers.keySet());
            }
        }
        return deadLetters.computeIfAbsent(consumer.settings().channel(),
                name -> new DeadLetterRedelivery(broker, consumer.settings()));
    }

    private MessageDecoder<?> decoder(ChannelSettings settings) {
        if (settings.decoder().isPresent()) {
            Instance<MessageDecoder<?>> named = decoders.select(Identifier.Literal.of(settings.decoder().get()));
            if (!named.isResolvable()) {
                throw new IllegalStateException(settings.key("decoder") + " is '" + settings.decoder().get() + "', but no"
                        + " single MessageDecoder bean has @Identifier(\"" + settings.decoder().get() + "\")");
            }
            return named.get();
        }
        if (decoders.isResolvable()) {
            return decoders.get();
        }
        Instance<MessageDecoder<?>> plain = decoders.select(Default.Literal.INSTANCE);
        if (plain.isResolvable()) {
            return plain.get();
        }
        List<String> found = new ArrayList<>();
        decoders.handles().forEach(h -> found.add(h.getBean().getBeanClass().getSimpleName()));
        throw new IllegalStateException("channel " + settings.channel() + " has no MessageDecoder: "
                + (found.isEmpty() ? "write one (a bean implementing MessageDecoder)"
                : "the service has " + found + "; name one with " + settings.key("decoder") + " and @Identifier on it"));
    }

    /**
     * The {@code @Incoming} methods that read one of these channels without {@code @Inbox}: the channel
     * claims each message in its transaction and commits it once the method returned, so such a
     * method's writes would commit apart from the claim (a crash between the two: an effect applied
     * twice, or a message marked done without its effect).
     */
    static List<String> withoutInbox(List<Class<?>> types, List<String> channels) {
        return withoutInbox(types, channels, IncomingChannels::of);
    }

    /** @param incoming the channels a method reads (its {@code @Incoming} values) */
    static List<String> withoutInbox(List<Class<?>> types, List<String> channels, Function<Method, List<String>> incoming) {
        List<String> problems = new ArrayList<>();
        for (Class<?> type : types) {
            Method[] methods;
            try {
                methods = type.getDeclaredMethods();
            } catch (LinkageError optionalClassAbsent) {
                continue; // a framework bean naming an absent optional class: not a reader of ours
            }
            for (Method method : methods) {
                for (String channel : incoming.apply(method)) {
                    if (channels.contains(channel) && !method.isAnnotationPresent(Inbox.class)) {
                        problems.add("@Incoming(\"" + channel + "\") method " + type.getName() + "." + method.getName()
                                + " reads a channel of " + InboxConnector.NAME + " without @Inbox: its writes would commit"
                                + " apart from the message's claim in the inbox; add @Inbox (and an InboxMetadata parameter)");
                    }
                }
            }
        }
        return problems;
    }

    /** The channels bound to this library's connector. */
    static List<String> channels(Config config) {
        String prefix = "mp.messaging.incoming.";
        return StreamSupport.stream(config.getPropertyNames().spliterator(), false)
                .filter(key -> key.startsWith(prefix) && key.endsWith(".connector"))
                .filter(key -> InboxConnector.NAME.equals(config.getOptionalValue(key, String.class).orElse(null)))
                .map(key -> key.substring(prefix.length(), key.length() - ".connector".length()))
                .distinct().sorted().toList();
    }
}
