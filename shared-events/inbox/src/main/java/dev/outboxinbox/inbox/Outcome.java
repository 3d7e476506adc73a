package dev.outboxinbox.inbox;

/** What became of one message; the transport acks, dead-letters or requeues accordingly. */
public sealed interface Outcome {

    /** First delivery: the effect was committed; {@code result} is what the business says it did. */
    record Applied(String result) implements Outcome {
    }

    /** Seen before (the inbox key existed, or the order already had an outcome): nothing done. */
    record Duplicate() implements Outcome {
    }

    /** This message alone makes the transaction fail for a reason that retrying cannot fix. */
    record Poison(String reason) implements Outcome {
    }

    /** The database kept failing for transient reasons past the retry budget: redeliver later. */
    record Transient(String reason) implements Outcome {
    }
}
