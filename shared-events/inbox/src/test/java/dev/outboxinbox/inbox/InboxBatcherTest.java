package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The batcher's own contract when the code under it breaks in a way no database error explains
 * (an {@link Error} from a bug or a broken class path): the messages in hand are handed back,
 * never stranded unacked, the service says why, and the next batch is applied. Unit level: an
 * Error cannot be made to come out of PostgreSQL.
 */
class InboxBatcherTest {

    private final AtomicBoolean broken = new AtomicBoolean(true);
    private final BatchHandler handler = new BatchHandler() {
        @Override
        public List<Outcome> handle(List<InboxMessage<?>> batch) {
            if (broken.getAndSet(false)) {
                throw new NoClassDefFoundError("injected: a class the handler needs is gone");
            }
            return batch.stream().<Outcome>map(e -> new Outcome.Duplicate()).toList();
        }

        @Override
        public void probe() {
        }
    };
    private final InboxBatcher batcher = new InboxBatcher(handler, 10, Duration.ofMillis(10), Duration.ofMillis(50),
            new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"));

    @AfterEach
    void stop() throws InterruptedException {
        batcher.stop(null);
    }

    @Test
    void anErrorInTheBatcherHandsTheBatchBackAndTheNextOneIsApplied() throws Exception {
        batcher.start(null);

        Outcome first = batcher.submit(event()).get(10, TimeUnit.SECONDS);
        assertThat(first).isInstanceOf(Outcome.Transient.class);
        assertThat(((Outcome.Transient) first).reason()).contains("NoClassDefFoundError");
        assertThat(batcher.problem()).contains("failed unexpectedly");
        assertThat(batcher.alive()).isTrue();

        assertThat(batcher.submit(event()).get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Duplicate.class);
        assertThat(batcher.problem()).isNull();
    }

    private static InboxMessage<String> event() {
        return new InboxMessage<>(UUID.randomUUID().toString(), "SomethingHappened", "{}");
    }
}
