package dev.outboxinbox.inbox;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.eclipse.microprofile.config.Config;

/**
 * What one consumed stream is read and kept under: its inbox key, its queue and exchange, its routing
 * keys, its dead letters, its partitions. A service has one per inbox channel, from that channel's
 * attributes ({@code mp.messaging.incoming.<channel>.*}, see {@link #ofChannel}); a service that
 * applies its messages with {@link BatchEffects} has one, from {@code inbox.*} ({@link #ofService}).
 *
 * <p><b>The inbox key is per channel.</b> Each channel keeps its messages under its own consumer name
 * (default {@code <inbox.consumer>.<channel>}): the inbox key is {@code (consumer, message_id)}, so a
 * message id that reaches two channels of one service (one event routed to both queues, say) takes
 * effect once <em>in each</em>. Two channels are two handlers with two effects; one handler's claim
 * must not swallow the other's. Within a channel a copy is a duplicate, whichever queue or partition
 * brought it.
 *
 * @param channel    the channel's name, or {@code inbox} for a {@link BatchEffects} service
 * @param keyPrefix  where its settings are read: {@code mp.messaging.incoming.<channel>.} or {@code inbox.}
 * @param decoder    the {@code @Identifier} of the {@link MessageDecoder} bean this channel uses; empty: the service's only one
 */
public record ChannelSettings(String channel, String keyPrefix, String consumer, String queue, String exchange,
                              String exchangeType, List<String> routingKeys, String deadLetterQueue,
                              String deadLetterExchange, String retryExchange, int deliveryLimit, int prefetch,
                              int maxMessageBytes, Duration holdUnreadableFor, Partitioning partitioning,
                              Optional<String> decoder) {

    /** How several instances share the stream out: see {@link InboxConfig.Partitioning}. */
    public record Partitioning(int count, String hashHeader, Duration heartbeat, Duration lease, Optional<String> instance) {
    }

    public ChannelSettings {
        if (consumer.isBlank() || consumer.length() > InboxMessage.MAX_KEY_LENGTH) {
            // The inbox column is varchar(64): a longer name would fail every message, like an outage that never ends.
            throw new IllegalArgumentException(keyPrefix + "consumer must be 1 to " + InboxMessage.MAX_KEY_LENGTH
                    + " characters, not '" + consumer + "'");
        }
        if (routingKeys.isEmpty() && !List.of("fanout", "headers").contains(exchangeType)) {
            throw new IllegalArgumentException(keyPrefix + "routing-keys is not set: name the event types this channel takes"
                    + " from the " + exchangeType + " exchange " + exchange + " (comma-separated)");
        }
        if (partitioning.count() < 0) {
            throw new IllegalArgumentException(keyPrefix + "partitioning.count must be 0 or more, not " + partitioning.count());
        }
        routingKeys = List.copyOf(routingKeys);
    }

    /**
     * A {@link BatchEffects} service's one stream, from {@code inbox.*}: the queue, its exchange and
     * routing keys are required there.
     */
    public static ChannelSettings ofService(InboxConfig config) {
        String queue = required(config.queue(), "inbox.queue", "the queue this service reads");
        return new ChannelSettings("inbox", "inbox.", config.consumer(), queue,
                required(config.exchange(), "inbox.exchange", "the exchange its queue is bound to"),
                config.exchangeType(), config.routingKeys().orElse(List.of()),
                config.deadLetterQueue().orElse(queue + ".dead-letter"),
                config.deadLetterExchange().orElse(queue + ".dead-letter"),
                config.retryExchange().orElse(queue + ".retry"),
                config.deliveryLimit(), config.prefetch(), config.maxMessageBytes(), config.holdUnreadableFor(),
                new Partitioning(config.partitioning().count(), config.partitioning().hashHeader(),
                        config.partitioning().heartbeat(), config.partitioning().lease(), config.partitioning().instance()),
                Optional.empty());
    }

    /**
     * One inbox channel, from its attributes under {@code mp.messaging.incoming.<channel>.} (SmallRye
     * hands the connector that view; an attribute missing there is looked up under
     * {@code mp.messaging.connector.inbox-rabbitmq.}), each with a default:
     * <ul>
     *   <li>{@code consumer}: {@code <inbox.consumer>.<channel>}, the inbox key's first half (see above);</li>
     *   <li>{@code queue}: the consumer name; {@code exchange}: the channel's name, type {@code exchange-type}
     *       ({@code topic}); {@code routing-keys}: required (the event types it takes), comma-separated;</li>
     *   <li>{@code dead-letter-queue}, {@code dead-letter-exchange}: {@code <queue>.dead-letter};
     *       {@code retry-exchange}: {@code <queue>.retry} (each channel has its own: a fanout exchange shared by
     *       two channels would hand each the other's dead letters);</li>
     *   <li>{@code delivery-limit}, {@code prefetch}, {@code max-message-bytes}, {@code hold-unreadable-for}:
     *       the service's {@code inbox.*} value, which is the default for all its channels;</li>
     *   <li>{@code partitioning.count} ({@code 0}), {@code partitioning.hash-header}, {@code partitioning.heartbeat},
     *       {@code partitioning.lease}: as {@code inbox.partitioning.*}; the instance's name is the service's
     *       ({@code inbox.partitioning.instance});</li>
     *   <li>{@code decoder}: the {@code @Identifier} of its {@link MessageDecoder}, where the service has several.</li>
     * </ul>
     */
    public static ChannelSettings ofChannel(String channel, Config attributes, InboxConfig service) {
        String prefix = "mp.messaging.incoming." + channel + ".";
        Function<String, Optional<String>> text = key -> attributes.getOptionalValue(key, String.class).filter(v -> !v.isBlank());
        String consumer = text.apply("consumer").orElse(service.consumer() + "." + channel);
        String queue = text.apply("queue").orElse(consumer);
        InboxConfig.Partitioning partitioning = service.partitioning();
        return new ChannelSettings(channel, prefix, consumer, queue,
                text.apply("exchange").orElse(channel),
                text.apply("exchange-type").orElse("topic"),
                text.apply("routing-keys").map(ChannelSettings::list).orElse(List.of()),
                text.apply("dead-letter-queue").orElse(queue + ".dead-letter"),
                text.apply("dead-letter-exchange").orElse(queue + ".dead-letter"),
                text.apply("retry-exchange").orElse(queue + ".retry"),
                attributes.getOptionalValue("delivery-limit", Integer.class).orElse(service.deliveryLimit()),
                attributes.getOptionalValue("prefetch", Integer.class).orElse(service.prefetch()),
                attributes.getOptionalValue("max-message-bytes", Integer.class).orElse(service.maxMessageBytes()),
                attributes.getOptionalValue("hold-unreadable-for", Duration.class).orElse(service.holdUnreadableFor()),
                new Partitioning(attributes.getOptionalValue("partitioning.count", Integer.class).orElse(0),
                        text.apply("partitioning.hash-header").orElse(partitioning.hashHeader()),
                        attributes.getOptionalValue("partitioning.heartbeat", Duration.class).orElse(partitioning.heartbeat()),
                        attributes.getOptionalValue("partitioning.lease", Duration.class).orElse(partitioning.lease()),
                        partitioning.instance()),
                text.apply("decoder"));
    }

    /** The full name of one of its settings, for a message that tells what to change: {@code key("queue")}. */
    public String key(String name) {
        return keyPrefix + name;
    }

    /** The queues this stream is read from: {@link #queue()}, or its partitions. */
    public List<String> queues() {
        int count = partitioning.count();
        return count == 0 ? List.of(queue) : IntStream.range(0, count).mapToObj(this::partitionQueue).toList();
    }

    public String partitionQueue(int partition) {
        return queue + "." + partition;
    }

    private static <T> T required(Optional<T> value, String key, String what) {
        return value.orElseThrow(() -> new IllegalArgumentException(key + " is not set: " + what + " (a service that"
                + " applies its messages with an @Incoming @Inbox method sets mp.messaging.incoming.<channel>.* instead)"));
    }

    private static List<String> list(String value) {
        return Arrays.stream(value.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }
}
