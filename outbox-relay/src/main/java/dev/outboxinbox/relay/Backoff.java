package dev.outboxinbox.relay;

import java.time.Duration;

/** Exponential backoff with a ceiling: 200 ms, 400 ms, … up to the maximum, then the maximum. */
record Backoff(Duration initial, Duration max) {

    Duration delay(int attempt) {
        long factor = 1L << Math.min(attempt, 20);
        Duration next = initial.multipliedBy(factor);
        return next.compareTo(max) > 0 ? max : next;
    }

    static void sleep(Duration delay) throws InterruptedException {
        Thread.sleep(delay.toMillis());
    }
}
