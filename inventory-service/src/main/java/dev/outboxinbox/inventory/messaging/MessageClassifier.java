package dev.outboxinbox.inventory.messaging;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inventory.InventoryConfig;
import dev.outboxinbox.inventory.inbox.InboxMessage;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.util.Map;
import java.util.Optional;

/**
 * Checks a message against the contract before anything else: size, message id, event type,
 * schema version, the JSON Schema of that version, and that the payload's event id is the
 * message id. Whatever fails here can never succeed on redelivery, so it is parked at once with
 * the reason, never retried and never allowed to block the messages behind it.
 */
@ApplicationScoped
class MessageClassifier {

    private static final int MAX_ID_LENGTH = 64;

    private final int maxBytes;

    MessageClassifier(InventoryConfig config) {
        this.maxBytes = config.processing().maxMessageBytes();
    }

    Classification classify(String messageId, String type, Map<String, Object> headers, byte[] body) {
        if (body == null || body.length == 0) {
            return new Classification.Rejected("empty body");
        }
        if (body.length > maxBytes) {
            return new Classification.Rejected("oversized body: " + body.length + " bytes, the limit is " + maxBytes);
        }
        if (messageId == null || messageId.isBlank() || messageId.length() > MAX_ID_LENGTH) {
            return new Classification.Rejected("no usable message_id: the consumer cannot deduplicate without one");
        }
        if (type == null || type.isBlank()) {
            return new Classification.Rejected("no event type (AMQP property 'type')");
        }
        Optional<Integer> version = schemaVersion(headers);
        if (version.isEmpty()) {
            return new Classification.Rejected("missing or non-integer header '" + MessageHeaders.SCHEMA_VERSION + "'");
        }
        if (!OrderCreated.TYPE.equals(type)) {
            // Not swallowed and marked done: an event this consumer does not know is parked for a human.
            return new Classification.Rejected("unknown event type '" + type + "'");
        }
        Optional<EventSchema> schema = EventSchema.of(type, version.get());
        if (schema.isEmpty()) {
            return new Classification.Rejected("unsupported schema version " + version.get() + " of " + type);
        }
        OrderCreated event;
        try {
            EventSchema.Validated validated = schema.get().validate(body);
            if (!validated.violations().isEmpty()) {
                return new Classification.Rejected("invalid " + type + " v" + version.get() + ": "
                        + String.join("; ", validated.violations()));
            }
            event = validated.as(OrderCreated.class);
        } catch (IOException e) {
            return new Classification.Rejected("malformed JSON: " + firstLine(e.getMessage()));
        }
        if (!event.eventId().toString().equals(messageId)) {
            return new Classification.Rejected("message_id " + messageId + " is not the payload's eventId " + event.eventId());
        }
        return new Classification.Accepted(new InboxMessage<>(messageId, OrderCreated.TYPE, event));
    }

    private static String firstLine(String message) {
        return message == null ? "unreadable" : message.lines().findFirst().orElse(message);
    }

    private static Optional<Integer> schemaVersion(Map<String, Object> headers) {
        Object value = headers == null ? null : headers.get(MessageHeaders.SCHEMA_VERSION);
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
