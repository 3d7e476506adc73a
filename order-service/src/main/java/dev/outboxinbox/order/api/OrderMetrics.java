package dev.outboxinbox.order.api;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * {@code orders_placed_total} (new orders, each with its event in the outbox),
 * {@code orders_replayed_total} (a retry with a known {@code Idempotency-Key}: the earlier order
 * returned, nothing written) and {@code orders_cancelled_total} (cancellations requested, each with
 * its OrderCancelled in the outbox; a repeated cancel request is not counted). Counted after the
 * transaction committed.
 */
@ApplicationScoped
class OrderMetrics {

    private final Counter placed;
    private final Counter replayed;
    private final Counter cancelled;

    OrderMetrics(MeterRegistry registry) {
        placed = Counter.builder("orders.placed").description("Orders placed: the order and its event committed together")
                .register(registry);
        replayed = Counter.builder("orders.replayed")
                .description("Idempotent replays: a retry with a known Idempotency-Key, answered with the earlier order")
                .register(registry);
        cancelled = Counter.builder("orders.cancelled")
                .description("Cancellations requested: the order CANCELLING and its OrderCancelled committed together")
                .register(registry);
    }

    void cancelled(boolean requestedNow) {
        if (requestedNow) {
            cancelled.increment();
        }
    }

    void answered(boolean wasReplay) {
        (wasReplay ? replayed : placed).increment();
    }
}
