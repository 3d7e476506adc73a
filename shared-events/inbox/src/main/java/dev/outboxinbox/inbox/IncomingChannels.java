package dev.outboxinbox.inbox;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * The channels a method reads: its {@code @Incoming} values (the annotation repeats). One answer for the
 * start-up checks ({@code InboxMethods}, {@code InboxConsumers}) and the connector's search for a look ahead.
 */
public final class IncomingChannels {

    private IncomingChannels() {
    }

    public static List<String> of(Method method) {
        return Arrays.stream(method.getAnnotationsByType(Incoming.class)).map(Incoming::value).toList();
    }
}
