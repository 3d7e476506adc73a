package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The channel path keeps a partition's order when a message fails: the failed one is offered again
 * before any message behind it, one message at a time (issue 27, item 3). Unit level: the order of
 * offers is the sink's own; the database's part (the probe, a real transaction) is InboxChannelTest's.
 */
class ChannelSinkOrderTest {

    private final List<String> offered = new CopyOnWriteArrayList<>();
    private final ChannelSink sink = new ChannelSink(new BatchHandler() {
        @Override
        public List<Outcome> handle(List<InboxMessage<?>> batch) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void probe() {
        }
    }, new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"), "test-consumer", Duration.ofMillis(50), Duration.ofMillis(200));

    @AfterEach
    void close() {
        sink.close();
    }

    @Test
    void aFailedMessageIsOfferedAgainBeforeTheOnesBehindIt() throws Exception {
        sink.messages(() -> { }).subscribe().with(message -> {
            String payload = (String) message.getPayload();
            offered.add(payload);
            if (payload.equals("first") && offered.stream().filter("first"::equals).count() <= 2) {
                // A deadlock: transient, offered again after a pause (twice here).
                message.nack(new IllegalStateException(new SQLException("deadlock detected", "40P01")));
            } else {
                message.ack();
            }
        });

        List<CompletableFuture<Outcome>> outcomes = List.of(sink.submit(event("first")), sink.submit(event("second")),
                sink.submit(event("third")));
        await().atMost(Duration.ofSeconds(10)).until(() -> outcomes.stream().allMatch(CompletableFuture::isDone));

        assertThat(offered).as("the failed message again and again, and only then the ones behind it")
                .containsExactly("first", "first", "first", "second", "third");
        for (CompletableFuture<Outcome> outcome : outcomes) {
            assertThat(outcome.get(1, TimeUnit.SECONDS)).isInstanceOf(Outcome.Applied.class);
        }
    }

    @Test
    void aMessageParkedAsPoisonLetsTheNextOneThrough() throws Exception {
        sink.messages(() -> { }).subscribe().with(message -> {
            offered.add((String) message.getPayload());
            if (message.getPayload().equals("bad")) {
                message.nack(new RejectedMessageException("never"));
            } else {
                message.ack();
            }
        });
        CompletableFuture<Outcome> bad = sink.submit(event("bad"));
        CompletableFuture<Outcome> good = sink.submit(event("good"));
        assertThat(bad.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Poison.class);
        assertThat(good.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Applied.class);
        assertThat(offered).containsExactly("bad", "good");
    }

    private static InboxMessage<String> event(String payload) {
        return new InboxMessage<>(payload + "-id", "SomethingHappened", payload);
    }
}
