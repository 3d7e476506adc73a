package dev.outboxinbox.events;

/**
 * An event of an older version than the one its handlers read, which knows how to become the next
 * version: the rule of this template is to upcast at the door ({@link EventSchema#decode}). Each
 * older version's record implements it, one step at a time (v1 → v2, later v2 → v3), so that a
 * handler is written against the newest record alone and a consumer reads every version the
 * contract still has.
 *
 * @param <N> the next version's record
 */
public interface OlderVersion<N extends Event> {

    /** This event as the next version; what the older version lacked is filled as that version's schema says. */
    N upcast();
}
