package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The batcher and the fences (issue 27, item 3): a batch ended by lock_timeout or by an ended idle
 * session is retried in place, however often, never probed and never parked; and the unsafe switch of
 * the order negative control really reverses what it gathers. Unit level: the order in which the
 * handler is called is the batcher's own (the fences' effect in PostgreSQL is PartitionFencingIT's).
 */
class InboxBatcherFencesTest {

    private final List<List<String>> handled = new CopyOnWriteArrayList<>();
    private final AtomicInteger blockedFor = new AtomicInteger();
    private final AtomicInteger probes = new AtomicInteger();
    private InboxBatcher batcher;

    private final BatchHandler handler = new BatchHandler() {
        @Override
        public List<Outcome> handle(List<InboxMessage<?>> batch) {
            handled.add(batch.stream().map(m -> (String) m.payload()).toList());
            if (blockedFor.getAndDecrement() > 0) {
                String state = blockedFor.get() % 2 == 0 ? DatabaseErrors.LOCK_NOT_AVAILABLE : DatabaseErrors.IDLE_IN_TRANSACTION_TIMEOUT;
                throw new IllegalStateException(new SQLException("canceling statement due to lock timeout", state));
            }
            return batch.stream().<Outcome>map(m -> new Outcome.Applied("applied " + m.payload())).toList();
        }

        @Override
        public void probe() {
            probes.incrementAndGet();
        }
    };

    @AfterEach
    void stop() throws InterruptedException {
        batcher.stop(null);
    }

    @Test
    void aBlockedBatchIsRetriedInPlaceNeverProbedNorParked() throws Exception {
        batcher = new InboxBatcher(handler, 10, Duration.ofMillis(1), Duration.ofMillis(5),
                new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"), false);
        blockedFor.set(8); // more than the retries before probing
        CompletableFuture<Outcome> outcome = batcher.submit(event("blocked"));
        batcher.start(null);

        assertThat(outcome.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Applied.class);
        assertThat(handled).hasSize(9).allMatch(b -> b.equals(List.of("blocked")));
        assertThat(probes).as("no probe: a lock timeout is nobody's fault").hasValue(0);
        assertThat(batcher.problem()).isNull();
    }

    @Test
    void theOutOfOrderSwitchAppliesEachGatheredBatchInReverse() throws Exception {
        batcher = new InboxBatcher(handler, 10, Duration.ofMillis(1), Duration.ofMillis(5),
                new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"), true);
        batcher.start(null);
        List<CompletableFuture<Outcome>> outcomes = new ArrayList<>();
        for (String payload : List.of("1", "2", "3", "4")) {
            outcomes.add(batcher.submit(event(payload))); // within the half second the batcher gathers
        }
        for (int i = 0; i < outcomes.size(); i++) {
            assertThat(outcomes.get(i).get(10, TimeUnit.SECONDS)).isEqualTo(new Outcome.Applied("applied " + (i + 1)));
        }
        assertThat(handled).containsExactly(List.of("4", "3", "2", "1"));
    }

    @Test
    void withoutTheSwitchABatchIsAppliedInTheOrderReceived() throws Exception {
        batcher = new InboxBatcher(handler, 10, Duration.ofMillis(1), Duration.ofMillis(5),
                new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"), false);
        for (String payload : List.of("1", "2", "3", "4")) {
            batcher.submit(event(payload));
        }
        batcher.start(null);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> handled.stream().mapToInt(List::size).sum() == 4);
        assertThat(handled.stream().flatMap(List::stream).toList()).containsExactly("1", "2", "3", "4");
    }

    private static InboxMessage<String> event(String payload) {
        return new InboxMessage<>("id-" + payload, "SomethingHappened", payload);
    }
}
