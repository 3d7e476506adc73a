package dev.outboxinbox.inbox;

/** What the door makes of a message before any transaction: a message to apply, or a reason to park it. */
public sealed interface Classification {

    record Accepted(InboxMessage<?> message) implements Classification {
    }

    record Rejected(String reason) implements Classification {
    }

    /** Not readable by this instance yet, readable by a newer one ({@link NotReadableYetException}): held, not parked. */
    record Held(String reason) implements Classification {
    }
}
