package dev.outboxinbox.relay;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ShutdownSignalException;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The broker closed a channel because of what was asked on it: 403 ACCESS_REFUSED (no permission to
 * configure or write an exchange), 404 NOT_FOUND (no such exchange) or 406 PRECONDITION_FAILED (the
 * exchange exists with another type or arguments). It concerns one exchange, named in the broker's
 * words, and so the events for that exchange only. Anything else that ends a channel or a connection
 * (a lost socket, a missed heartbeat, a broker shutting down, a hard connection error) is not a refusal:
 * it is an outage, and everything waits for it.
 */
record BrokerRefusal(int code, String text) {

    private static final Set<Integer> CODES = Set.of(AMQP.ACCESS_REFUSED, AMQP.NOT_FOUND, AMQP.PRECONDITION_FAILED);
    private static final Pattern EXCHANGE = Pattern.compile("exchange '([^']*)'");

    /** The refusal behind an exception from the client library, or null if it is none. */
    static BrokerRefusal of(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ShutdownSignalException closed && !closed.isHardError()
                    && closed.getReason() instanceof AMQP.Channel.Close close && CODES.contains(close.getReplyCode())) {
                return new BrokerRefusal(close.getReplyCode(), close.getReplyText());
            }
        }
        return null;
    }

    /** The exchange the broker named, or null. */
    String exchange() {
        Matcher named = EXCHANGE.matcher(text);
        return named.find() ? named.group(1) : null;
    }

    @Override
    public String toString() {
        return text;
    }
}
