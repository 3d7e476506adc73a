package dev.outboxinbox.inbox.contract;

import dev.outboxinbox.events.Event;
import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.inbox.MessageDecoder;
import dev.outboxinbox.inbox.NotReadableYetException;
import dev.outboxinbox.inbox.RejectedMessageException;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A consumer's half of the door for this system's events: the event types it takes (those of
 * {@code T}), the JSON Schema of the version the message says, and that the payload's event id is
 * the message id, then every older version upcast to the newest record, so a handler knows one shape
 * ({@link EventSchema#decode}). What can never succeed is a {@link RejectedMessageException} with the
 * schema's words (dead-lettered at once); the version after the newest this consumer reads, from a
 * producer deployed first, is a {@link NotReadableYetException} (held for an upgraded instance, so that
 * nothing of its aggregate overtakes it). A consumer extends it and names {@code T}:
 *
 * <pre>
 * &#64;Singleton
 * class InventoryReplyDecoder extends ContractDecoder&lt;InventoryEvent&gt; {
 *     InventoryReplyDecoder() {
 *         super(InventoryEvent.class);
 *     }
 * }
 * </pre>
 */
public abstract class ContractDecoder<T extends Event> implements MessageDecoder<T> {

    private final Class<T> expected;
    /** Types this instance reads fewer versions of than the contract has (a rolling deploy's rehearsal): type → versions. */
    private final Map<String, Set<Integer>> narrowed;

    protected ContractDecoder(Class<T> expected) {
        this(expected, Map.of());
    }

    /**
     * @param narrowed per event type, the versions this instance reads when fewer than the contract has: it then
     *                 behaves as a build from before the newer ones (held, not read), which is how a rolling deploy
     *                 is rehearsed on one build
     * @throws IllegalArgumentException for a version the contract does not have
     */
    protected ContractDecoder(Class<T> expected, Map<String, Set<Integer>> narrowed) {
        this.expected = expected;
        narrowed.forEach((type, versions) -> {
            Set<Integer> known = EventSchema.versions(type);
            if (versions.isEmpty() || !known.containsAll(versions)) {
                throw new IllegalArgumentException("reading versions " + new TreeSet<>(versions) + " of " + type
                        + ", which has versions " + known);
            }
        });
        this.narrowed = Map.copyOf(narrowed);
    }

    @Override
    public T decode(String messageId, String type, int schemaVersion, byte[] body) throws RejectedMessageException {
        try {
            Set<Integer> reads = narrowed.get(type);
            return reads == null
                    ? EventSchema.decode(messageId, type, schemaVersion, body, expected)
                    : EventSchema.decode(messageId, type, schemaVersion, body, expected, reads);
        } catch (EventSchema.NewerVersionException e) {
            // Not poison: an upgraded instance reads it. Held, so that nothing of its aggregate overtakes it.
            throw new NotReadableYetException(e.getMessage());
        } catch (EventSchema.InvalidEventException e) {
            throw new RejectedMessageException(e.getMessage());
        }
    }
}
