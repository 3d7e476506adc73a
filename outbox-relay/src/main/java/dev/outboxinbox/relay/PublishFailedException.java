package dev.outboxinbox.relay;

import java.util.List;

/** A batch was not confirmed whole: nothing of it may be committed. */
class PublishFailedException extends Exception {

    private final List<String> unroutable;

    PublishFailedException(String message, List<String> unroutable) {
        super(message);
        this.unroutable = List.copyOf(unroutable);
    }

    PublishFailedException(String message, Throwable cause) {
        super(message + ": " + cause, cause);
        this.unroutable = List.of();
    }

    /** The messages the broker returned because no queue was bound for them. */
    List<String> unroutable() {
        return unroutable;
    }
}
