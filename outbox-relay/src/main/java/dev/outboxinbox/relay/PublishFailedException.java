package dev.outboxinbox.relay;

/** A batch was not confirmed whole: nothing of it may be committed. */
class PublishFailedException extends Exception {

    PublishFailedException(String message) {
        super(message);
    }

    PublishFailedException(String message, Throwable cause) {
        super(message + ": " + cause, cause);
    }
}
