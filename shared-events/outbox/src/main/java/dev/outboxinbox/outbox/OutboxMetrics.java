package dev.outboxinbox.outbox;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * What the outbox wrote and purged, on {@code /q/metrics}: {@code outbox_rows_written_total{aggregate_type}}
 * and {@code outbox_rows_purged_total}. A row counts as written when its transaction has committed,
 * not when it was inserted: a rolled-back order wrote no event.
 */
@ApplicationScoped
public class OutboxMetrics {

    private final MeterRegistry registry;
    private final TransactionSynchronizationRegistry transactions;
    private final Map<String, Counter> written = new ConcurrentHashMap<>();
    private final Counter purged;

    OutboxMetrics(MeterRegistry registry, TransactionSynchronizationRegistry transactions) {
        this.registry = registry;
        this.transactions = transactions;
        this.purged = Counter.builder("outbox.rows.purged").description("Outbox rows deleted past their retention")
                .register(registry);
    }

    /** Counts the rows once the caller's transaction commits; nothing if it rolls back. */
    void appendedInThisTransaction(List<OutboxMessage> messages) {
        Map<String, Long> byAggregate = messages.stream()
                .collect(Collectors.groupingBy(OutboxMessage::aggregateType, Collectors.counting()));
        transactions.registerInterposedSynchronization(new Synchronization() {
            @Override
            public void beforeCompletion() {
                // nothing to do before the commit
            }

            @Override
            public void afterCompletion(int status) {
                if (status == Status.STATUS_COMMITTED) {
                    byAggregate.forEach((aggregate, count) -> counter(aggregate).increment(count));
                }
            }
        });
    }

    void purged(long rows) {
        purged.increment(rows);
    }

    private Counter counter(String aggregateType) {
        return written.computeIfAbsent(aggregateType, type -> Counter.builder("outbox.rows.written")
                .tag("aggregate_type", type)
                .description("Outbox rows committed with the business change they announce")
                .register(registry));
    }
}
