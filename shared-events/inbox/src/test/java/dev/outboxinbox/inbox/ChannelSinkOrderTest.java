package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The channel's group commit and its order (issue 27, item 3; issue 29, item 1): the messages that
 * arrived together share a transaction; one that fails rolls its batch back and is offered again alone
 * before any message behind it. Unit level, with a transaction that only counts: the order of offers and
 * the transactions are the sink's own; the database's part (the claim, the probe, a real rollback) is
 * InboxChannelTest's.
 */
class ChannelSinkOrderTest {

    private final List<String> offered = new CopyOnWriteArrayList<>();
    private final AtomicInteger begun = new AtomicInteger();
    private final AtomicInteger committed = new AtomicInteger();
    private final AtomicInteger rolledBack = new AtomicInteger();
    private final AtomicBoolean failNextCommit = new AtomicBoolean();
    /** The threads the method was called on: the channel's own, as SmallRye calls an @NonBlocking method. */
    private final Set<String> callingThreads = ConcurrentHashMap.newKeySet();
    /** Whether a thread is inside the fake transaction (between join and leave). */
    private final AtomicBoolean inTransaction = new AtomicBoolean();
    /** What the bean's look ahead saw, one entry a transaction: its payloads, and whether it was inside the transaction. */
    private final List<String> looks = new CopyOnWriteArrayList<>();
    /** A payload the look ahead cannot take (it throws for a batch that has it). */
    private volatile String unlookable = "none";
    /** Ids the fake inbox already has: a claim does not add them. */
    private final Set<String> known = new HashSet<>(Set.of("copy-id"));

    private final ChannelSink sink = new ChannelSink(new ChannelTransaction.Opener() {
        @Override
        public ChannelTransaction begin(String consumer, List<InboxMessage<?>> batch) {
            begun.incrementAndGet();
            Set<String> fresh = new HashSet<>();
            batch.stream().map(InboxMessage::messageId).filter(id -> !known.contains(id)).forEach(fresh::add);
            return new ChannelTransaction() {
                private volatile boolean abandoned;

                @Override
                public boolean claimed(String messageId) {
                    return fresh.remove(messageId);
                }

                @Override
                public boolean join() {
                    if (abandoned) {
                        return false;
                    }
                    inTransaction.set(true);
                    return true;
                }

                @Override
                public void abandon() {
                    abandoned = true;
                }

                @Override
                public void leave() {
                    inTransaction.set(false);
                }

                @Override
                public void commit() {
                    if (failNextCommit.getAndSet(false)) {
                        throw new IllegalStateException("a constraint checked at commit");
                    }
                    committed.incrementAndGet();
                }

                @Override
                public void rollback() {
                    rolledBack.incrementAndGet();
                }
            };
        }

        @Override
        public void probe(String consumer) {
        }
    }, payloads -> {
        looks.add(payloads + (inTransaction.get() ? "" : " outside the transaction") + " after " + offered.size() + " calls");
        if (payloads.contains(unlookable)) {
            throw new IllegalStateException("cannot look at " + unlookable);
        }
    }, new InboxMetrics(new SimpleMeterRegistry(), "test-consumer"), "test-consumer", 100, true,
            Duration.ofMillis(50), Duration.ofMillis(200));

    @AfterEach
    void close() {
        sink.close();
        assertThat(callingThreads).as("every call on the channel's own thread").containsOnly("inbox-channel-test-consumer");
    }

    @Test
    void aFailedMessageIsOfferedAgainBeforeTheOnesBehindIt() throws Exception {
        subscribe(message -> {
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
        awaitSettled(outcomes);

        assertThat(offered).as("the failed message again and again, and only then the ones behind it")
                .containsExactly("first", "first", "first", "second", "third");
        for (CompletableFuture<Outcome> outcome : outcomes) {
            assertThat(outcome.get(1, TimeUnit.SECONDS)).isInstanceOf(Outcome.Applied.class);
        }
    }

    @Test
    void aMessageParkedAsPoisonLetsTheNextOneThrough() throws Exception {
        subscribe(rejecting("bad"));
        CompletableFuture<Outcome> bad = sink.submit(event("bad"));
        CompletableFuture<Outcome> good = sink.submit(event("good"));
        assertThat(bad.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Poison.class);
        assertThat(good.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Applied.class);
        assertThat(offered).containsExactly("bad", "good");
    }

    @Test
    void messagesThatArriveTogetherShareOneTransactionAndACopyNeverReachesTheMethod() throws Exception {
        // Submitted before anyone consumes the channel: the channel's thread starts with all five in hand.
        List<CompletableFuture<Outcome>> outcomes = submitAll("one", "two", "copy", "three", "two");
        subscribe(message -> {
            offered.add((String) message.getPayload());
            message.ack();
        });
        awaitSettled(outcomes);

        assertThat(begun).as("one transaction").hasValue(1);
        assertThat(committed).hasValue(1);
        assertThat(offered).as("a copy of an earlier message, and the second 'two' of this batch, are not offered")
                .containsExactly("one", "two", "three");
        assertThat(outcomes.stream().map(CompletableFuture::join).map(o -> o.getClass().getSimpleName()))
                .containsExactly("Applied", "Applied", "Duplicate", "Applied", "Duplicate");
    }

    @Test
    void aMessageThatThrowsRollsItsBatchBackAndIsJudgedAloneWhileTheOthersKeepTheirOrder() throws Exception {
        List<CompletableFuture<Outcome>> outcomes = submitAll("a", "b", "bad", "c", "d");
        subscribe(rejecting("bad"));
        awaitSettled(outcomes);

        assertThat(offered).as("the batch up to the failure (the rest not called), rolled back; the ones before it again;"
                        + " the ones behind it").containsExactly("a", "b", "bad", "a", "b", "c", "d");
        assertThat(rolledBack).as("the first try of the batch").hasValue(1);
        assertThat(committed).as("[a, b] and [c, d]; the rejected message is parked without another try").hasValue(2);
        assertThat(outcomes.stream().map(CompletableFuture::join).map(o -> o.getClass().getSimpleName()))
                .containsExactly("Applied", "Applied", "Poison", "Applied", "Applied");
    }

    @Test
    void aBatchThatFailsWithNoMessageToBlameIsAppliedOneMessageATransaction() throws Exception {
        failNextCommit.set(true);
        List<CompletableFuture<Outcome>> outcomes = submitAll("x", "y", "z");
        subscribe(message -> {
            offered.add((String) message.getPayload());
            message.ack();
        });
        awaitSettled(outcomes);

        assertThat(offered).as("the batch, its commit refused; then each alone").containsExactly("x", "y", "z", "x", "y", "z");
        assertThat(rolledBack).hasValue(1);
        assertThat(committed).hasValue(3);
        assertThat(outcomes.stream().map(CompletableFuture::join)).allMatch(Outcome.Applied.class::isInstance);
    }

    @Test
    void theBeanLooksAtABatchsNewMessagesOnceInItsTransactionBeforeTheirCalls() throws Exception {
        List<CompletableFuture<Outcome>> outcomes = submitAll("one", "copy", "two", "three");
        subscribe(rejecting("nothing"));
        awaitSettled(outcomes);

        assertThat(looks).as("one look for the batch, at the messages to be offered (not the copy), before any call")
                .containsExactly("[one, two, three] after 0 calls");
        assertThat(offered).containsExactly("one", "two", "three");
        assertThat(committed).hasValue(1);
    }

    @Test
    void aLookThatFailsFailsItsBatchAndTheMessageItCannotTakeIsJudgedAlone() throws Exception {
        unlookable = "odd";
        List<CompletableFuture<Outcome>> outcomes = submitAll("p", "odd", "q");
        subscribe(rejecting("nothing"));
        awaitSettled(outcomes);

        assertThat(looks).as("the batch's look fails; then a look a message, the odd one's twice (the probe passes)")
                .containsExactly("[p, odd, q] after 0 calls", "[p] after 0 calls", "[odd] after 1 calls", "[odd] after 1 calls",
                        "[q] after 1 calls");
        assertThat(offered).as("no call in a transaction whose look failed").containsExactly("p", "q");
        assertThat(outcomes.stream().map(CompletableFuture::join).map(o -> o.getClass().getSimpleName()))
                .containsExactly("Applied", "Poison", "Applied");
        assertThat(outcomes.get(1).join()).asString().contains("cannot look at odd");
    }

    /**
     * SmallRye and the {@link Inbox} interceptor, as far as the sink sees them: each call on the thread
     * that emitted the message (an {@code @NonBlocking} method), in order; the method is not called in an
     * abandoned batch.
     */
    private void subscribe(Consumer<Message<?>> method) {
        sink.messages(() -> { }).subscribe().with(message -> {
            callingThreads.add(Thread.currentThread().getName());
            InboxMetadata metadata = message.getMetadata(InboxMetadata.class).orElseThrow();
            if (metadata.transaction().join()) {
                metadata.joined();
                method.accept(message);
            } else {
                message.ack();
            }
        });
    }

    /** A method that the business's rejection stops for {@code refused}, and that applies every other message. */
    private Consumer<Message<?>> rejecting(String refused) {
        return message -> {
            offered.add((String) message.getPayload());
            if (message.getPayload().equals(refused)) {
                message.nack(new RejectedMessageException("never"));
            } else {
                message.ack();
            }
        };
    }

    private List<CompletableFuture<Outcome>> submitAll(String... payloads) {
        List<CompletableFuture<Outcome>> outcomes = new ArrayList<>();
        for (String payload : payloads) {
            outcomes.add(sink.submit(event(payload)));
        }
        return outcomes;
    }

    private static void awaitSettled(List<CompletableFuture<Outcome>> outcomes) {
        await().atMost(Duration.ofSeconds(10)).until(() -> outcomes.stream().allMatch(CompletableFuture::isDone));
    }

    private static InboxMessage<String> event(String payload) {
        return new InboxMessage<>(payload + "-id", "SomethingHappened", payload);
    }
}
