package dev.outboxinbox.inbox;

import java.util.Map;
import java.util.Optional;

/**
 * Checks a message before anything else: the envelope here (size, message id, type, schema
 * version), the payload in the service's {@link MessageDecoder} (a known type, its schema).
 * Whatever fails here can never succeed on redelivery, so it is parked at once with the reason,
 * never retried and never allowed to block the messages behind it. One per inbox channel: its decoder,
 * its limits, its metrics.
 */
public class MessageClassifier {

    /** A delivery this close to the queue's delivery limit is counted: the broker dead-letters it on its own soon. */
    static final int NEAR_LIMIT = 2;

    private final int maxBytes;
    private final MessageDecoder<?> decoder;
    private final int deliveryLimit;
    private final InboxMetrics metrics;

    /** The door of one channel: its size and delivery limits, its decoder, its consumer's metrics. */
    public static MessageClassifier of(ChannelSettings channel, MessageDecoder<?> decoder, InboxMetrics metrics) {
        return new MessageClassifier(channel.maxMessageBytes(), decoder, channel.deliveryLimit(), metrics);
    }

    MessageClassifier(int maxBytes, MessageDecoder<?> decoder, int deliveryLimit, InboxMetrics metrics) {
        this.maxBytes = maxBytes;
        this.decoder = decoder;
        this.deliveryLimit = deliveryLimit;
        this.metrics = metrics;
    }

    public Classification classify(String messageId, String type, Map<String, Object> headers, byte[] body) {
        if (nearDeliveryLimit(headers, deliveryLimit)) {
            // Every return of an unacked message counts on RabbitMQ 3.x: worth an alert before the broker parks it.
            metrics.nearDeliveryLimit();
        }
        if (body == null || body.length == 0) {
            return new Classification.Rejected("empty body");
        }
        if (body.length > maxBytes) {
            return new Classification.Rejected("oversized body: " + body.length + " bytes, the limit is " + maxBytes);
        }
        if (messageId == null || messageId.isBlank() || messageId.length() > InboxMessage.MAX_KEY_LENGTH) {
            return new Classification.Rejected("no usable message_id: the consumer cannot deduplicate without one");
        }
        if (type == null || type.isBlank()) {
            return new Classification.Rejected("no event type (AMQP property 'type')");
        }
        if (type.length() > InboxMessage.MAX_KEY_LENGTH) {
            return new Classification.Rejected("event type longer than " + InboxMessage.MAX_KEY_LENGTH + " characters");
        }
        Optional<Integer> version = schemaVersion(headers);
        if (version.isEmpty()) {
            return new Classification.Rejected("missing or non-integer header '" + InboxHeaders.SCHEMA_VERSION + "'");
        }
        try {
            return new Classification.Accepted(new InboxMessage<>(messageId, type, decoder.decode(messageId, type, version.get(), body)));
        } catch (NotReadableYetException e) {
            return new Classification.Held(e.reason());
        } catch (RejectedMessageException e) {
            return new Classification.Rejected(e.reason());
        }
    }

    /** Whether the broker's count of earlier deliveries ({@code x-delivery-count}, quorum queues) is near the limit. */
    static boolean nearDeliveryLimit(Map<String, Object> headers, int deliveryLimit) {
        Object count = headers == null ? null : headers.get("x-delivery-count");
        return count instanceof Number number && number.longValue() >= deliveryLimit - NEAR_LIMIT;
    }

    private static Optional<Integer> schemaVersion(Map<String, Object> headers) {
        Object value = headers == null ? null : headers.get(InboxHeaders.SCHEMA_VERSION);
        if (value instanceof Number number) {
            return Optional.of(number.intValue());
        }
        if (value != null) {
            try {
                return Optional.of(Integer.parseInt(value.toString()));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }
}
