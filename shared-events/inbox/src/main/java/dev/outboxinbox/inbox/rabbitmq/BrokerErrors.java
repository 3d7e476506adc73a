package dev.outboxinbox.inbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.ShutdownSignalException;

/**
 * What the broker said, for a person: the Java client wraps a refusal (406 PRECONDITION_FAILED, 403
 * ACCESS_REFUSED, 404 NOT_FOUND, 503 COMMAND_INVALID for a missing plugin's exchange type) in an
 * {@code IOException} whose own text is empty; the words are in the close method it carries.
 */
final class BrokerErrors {

    private BrokerErrors() {
    }

    /** e.g. {@code 406 PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' …}, with what wrapped it. */
    static String describe(Throwable failure) {
        StringBuilder text = new StringBuilder();
        for (Throwable cause = failure; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
            String words = cause instanceof ShutdownSignalException signal ? words(signal) : cause.getMessage();
            if (words != null && !words.isBlank() && text.indexOf(words) < 0) {
                text.append(text.length() == 0 ? "" : ": ").append(words);
            }
        }
        return text.length() == 0 ? failure.toString() : text.toString();
    }

    private static String words(ShutdownSignalException signal) {
        Method reason = signal.getReason();
        if (reason instanceof AMQP.Channel.Close close) {
            return close.getReplyCode() + " " + close.getReplyText();
        }
        if (reason instanceof AMQP.Connection.Close close) {
            return close.getReplyCode() + " " + close.getReplyText() + " (the connection was closed)";
        }
        return signal.getMessage();
    }
}
