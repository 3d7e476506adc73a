package dev.outboxinbox.inbox;

/** A message that can never be applied, with the reason it is dead-lettered under. */
public class RejectedMessageException extends Exception {

    public RejectedMessageException(String reason) {
        super(reason, null, false, false);
    }

    public String reason() {
        return getMessage();
    }
}
