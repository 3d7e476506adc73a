package dev.outboxinbox.relay;

/** A batch was not confirmed whole: nothing of it may be committed. */
class PublishFailedException extends Exception {

    private final transient BrokerRefusal refusal;

    PublishFailedException(String message) {
        super(message);
        this.refusal = null;
    }

    PublishFailedException(String message, Throwable cause) {
        super(message + ": " + cause, cause);
        this.refusal = BrokerRefusal.of(cause);
    }

    /** The channel was closed by a refusal ({@link BrokerRefusal}): for the caller to park that exchange's events. */
    PublishFailedException(String message, BrokerRefusal refusal) {
        super(message + ": " + refusal);
        this.refusal = refusal;
    }

    /** Why the broker closed the channel, when it was a refusal of one exchange; else null. */
    BrokerRefusal refusal() {
        return refusal;
    }
}
