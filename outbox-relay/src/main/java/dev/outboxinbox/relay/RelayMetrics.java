package dev.outboxinbox.relay;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * What the relay did and how far behind it is, on {@code /q/metrics}:
 * {@code outbox_relay_events_published_total}, {@code …_events_parked_total}, {@code …_events_refused_total}
 * (of the parked, those whose exchange the broker refused),
 * {@code …_events_recovered_total}, {@code …_wal_records_skipped_total},
 * {@code …_batch_attempts_failed_total}, {@code …_confirm_latency_seconds} (publish to last
 * confirm, per batch), {@code …_batch_size_events} (events per confirmed batch),
 * {@code …_commit_to_read_seconds}, {@code …_commit_to_handed_seconds} and {@code …_commit_to_confirmed_seconds} (per
 * event, from its transaction's commit to Debezium reading it from the slot, to Debezium handing its batch to the relay,
 * and to the broker's confirm of the batch: the relay's stages of a hop's latency, beside the consumer's
 * {@code inbox_commit_to_applied_seconds}),
 * {@code …_slot_retained_wal_bytes}, {@code …_oldest_unpublished_age_seconds} and {@code outbox_relay_leader}. Retries are
 * {@code …_batch_attempts_failed_total}: every failed attempt is retried, the whole batch.
 */
@Startup // registered at start, not at the first confirmed batch: a standby publishes none, and shows its gauges all the same
@ApplicationScoped
class RelayMetrics {

    private final Timer confirmLatency;
    private final DistributionSummary batchSize;
    private final Timer commitToRead;
    private final Timer commitToHanded;
    private final Timer commitToConfirmed;

    RelayMetrics(MeterRegistry registry, RelayStatus status, RelayLag lag, RelayLeadership leadership) {
        Gauge.builder("outbox.relay.leader", leadership, l -> l.isLeader() ? 1 : 0)
                .description("1 while this instance holds the slot's lock and relays, 0 while it is a standby").register(registry);
        counter(registry, "outbox.relay.events.published", "Events the broker confirmed in a queue", status, RelayStatus::published);
        counter(registry, "outbox.relay.events.parked", "Unroutable or refused events parked in outbox-relay.parked", status, RelayStatus::parked);
        counter(registry, "outbox.relay.events.refused",
                "Events parked because the broker refused their exchange (403/404/406: a permission or a type to fix)",
                status, RelayStatus::refused);
        counter(registry, "outbox.relay.events.recovered", "Events republished from the outbox table after a slot was lost",
                status, RelayStatus::recoveredEvents);
        counter(registry, "outbox.relay.wal.records.skipped", "WAL records that were not outbox inserts", status, RelayStatus::skipped);
        counter(registry, "outbox.relay.batch.attempts.failed", "Batch attempts that were not confirmed whole and were retried",
                status, RelayStatus::failedAttempts);
        gauge(registry, "outbox.relay.slot.retained.wal.bytes", "WAL the relay's slot keeps on the producer's disk (-1: no slot)",
                lag, l -> l.sample().retainedWalBytes());
        gauge(registry, "outbox.relay.oldest.unpublished.age.seconds",
                "Age of the oldest outbox row committed after the last published event (-1: unknown)",
                lag, l -> l.sample().oldestUnpublishedSeconds());
        confirmLatency = Timer.builder("outbox.relay.confirm.latency")
                .description("From a batch's first publish to its last publisher confirm")
                .publishPercentiles(0.5, 0.95, 0.99)
                .register(registry);
        batchSize = DistributionSummary.builder("outbox.relay.batch.size").baseUnit("events")
                .description("Events per batch confirmed whole (the unit of publishing and of the offset commit)")
                .register(registry);
        commitToRead = perEvent(registry, "outbox.relay.commit.to.read",
                "From the commit of the event's transaction (the WAL's commit time) to Debezium reading it from the slot");
        commitToHanded = perEvent(registry, "outbox.relay.commit.to.handed",
                "From the commit of the event's transaction (the WAL's commit time) to Debezium handing its batch to the relay");
        commitToConfirmed = perEvent(registry, "outbox.relay.commit.to.confirmed",
                "From the commit of the event's transaction (the WAL's commit time) to the broker's confirm of its whole batch");
    }

    /** When an event's transaction committed (the WAL's commit time) and when Debezium read it from the slot (its change event's time). */
    record Stamps(Instant committed, Instant read) {
    }

    /** A batch confirmed whole: its events' stamps, when Debezium handed the batch over, and now (confirmed). */
    void eventsConfirmed(List<Stamps> events, Instant handed) {
        Instant confirmed = Instant.now();
        for (Stamps event : events) {
            commitToRead.record(Duration.between(event.committed(), event.read()).abs());
            commitToHanded.record(Duration.between(event.committed(), handed).abs());
            commitToConfirmed.record(Duration.between(event.committed(), confirmed).abs());
        }
    }

    /** Same buckets as the consumers' inbox_commit_to_applied_seconds, so that a hop's stages line up. */
    private static Timer perEvent(MeterRegistry registry, String name, String description) {
        return Timer.builder(name).description(description)
                .publishPercentiles(0.5, 0.95, 0.99)
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
    }

    void batchConfirmed(Duration took, int events) {
        confirmLatency.record(took);
        batchSize.record(events);
    }

    private static void counter(MeterRegistry registry, String name, String description, RelayStatus status,
                                ToDoubleFunction<RelayStatus> value) {
        FunctionCounter.builder(name, status, value).description(description).register(registry);
    }

    private static void gauge(MeterRegistry registry, String name, String description, RelayLag lag, ToDoubleFunction<RelayLag> value) {
        Gauge.builder(name, lag, value).description(description).register(registry);
    }
}
