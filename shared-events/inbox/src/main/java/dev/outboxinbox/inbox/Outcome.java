package dev.outboxinbox.inbox;

/** What became of one message; the transport acks, dead-letters or requeues accordingly. */
public sealed interface Outcome {

    /** First delivery: the effect was committed; {@code result} is what the business says it did. */
    record Applied(String result) implements Outcome {
    }

    /** Seen before by this consumer (its inbox key existed): nothing done. */
    record Duplicate() implements Outcome {
    }

    /**
     * New to this consumer (its inbox key was added), but the business already had its effect under
     * another message id (the order already had an outcome): nothing changed. Not a redelivery: a
     * second event for one effect, which only the business's own key can tell.
     */
    record Unchanged() implements Outcome {
    }

    /** This message alone makes the transaction fail for a reason that retrying cannot fix. */
    record Poison(String reason) implements Outcome {
    }

    /** The database kept failing for transient reasons past the retry budget: redeliver later. */
    record Transient(String reason) implements Outcome {
    }
}
