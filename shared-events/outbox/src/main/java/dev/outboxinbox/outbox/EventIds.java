package dev.outboxinbox.outbox;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Event ids that grow with time (UUID version 7, RFC 9562: 48 bits of Unix milliseconds, then 74
 * random bits). The outbox's primary key, and every consumer's inbox key, then take new ids at the
 * right-hand edge of their index instead of at random pages: fewer pages touched and written per
 * batch. Still unique without coordination; not meant to be unguessable.
 */
public final class EventIds {

    private EventIds() {
    }

    public static UUID next() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long millis = System.currentTimeMillis();
        long high = (millis << 16) | 0x7000L | (random.nextInt() & 0x0FFFL);
        long low = (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(high, low);
    }
}
