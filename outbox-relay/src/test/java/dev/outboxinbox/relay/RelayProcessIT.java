package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.testing.OtlpReceiver;
import dev.outboxinbox.testing.ServiceProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The packaged relay stopped and killed mid-stream: nothing is lost, and a clean stop doubles nothing. */
class RelayProcessIT {

    private static final int EVENTS = 12_000;
    private static final int TRANSACTIONS = 60;
    /** Stop or kill the relay once this many events are through: the producer is still writing then. */
    private static final int MID_STREAM = 2_000;

    /** Every event the test writes belongs to this one trace (as if one request had caused them all). */
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String ROW_SPAN = "00f067aa0ba902b7";
    private static final String ROW_TRACEPARENT = "00-" + TRACE_ID + "-" + ROW_SPAN + "-01";

    private static OtlpReceiver collector;
    private Map<String, String> config;

    @BeforeAll
    static void startTheCollector() throws Exception {
        collector = OtlpReceiver.start();
    }

    @BeforeEach
    void freshWorld() {
        config = RelayFixture.prepare();
        // Tracing on, exported to the test's collector: the relay's publish spans are checked below.
        config.put("otel.sdk.disabled", "false");
        config.put("otel.exporter.otlp.endpoint", collector.endpoint().toString());
        config.put("otel.exporter.otlp.protocol", "http/protobuf");
        config.put("quarkus.otel.bsp.schedule.delay", "200ms");
    }

    @AfterAll
    static void dropTheSlot() {
        RelayFixture.dropSlot();
        collector.close();
    }

    @Test
    void aRelayStoppedGracefullyMidStreamDeliversEveryEventExactlyOnceAfterRestart() throws Exception {
        Run run = interruptMidStream("graceful", ServiceProcess::stopGracefully);

        System.out.printf("[graceful stop] %d delivered before the stop, %d after; %d distinct, %d duplicates%n",
                run.beforeRestart(), run.queue().messageIds().size() - run.beforeRestart(),
                run.queue().deliveriesById().size(), run.duplicates());
        assertThat(run.queue().messageIds()).as("a graceful stop commits what it published: no event twice")
                .hasSize(EVENTS).doesNotHaveDuplicates();
    }

    /** Long (bash .ci/run --long): every CI run's chaos run kills both relays with kill -9 mid-stream and checks the same. */
    @Test
    @Tag("long")
    void aRelayKilledMidStreamLosesNothing() throws Exception {
        Run run = interruptMidStream("killed", ServiceProcess::kill);

        System.out.printf("[kill -9] %d delivered before the kill; %d deliveries in all, %d distinct, %d duplicates%n",
                run.beforeRestart(), run.queue().messageIds().size(), run.queue().deliveriesById().size(), run.duplicates());
        assertThat(new HashSet<>(run.queue().messageIds())).containsExactlyInAnyOrderElementsOf(run.expected());

        // The trace survives the restart: every copy, the republished ones too, continues the row's trace
        // in a publish span of its own (a child of the row's span), so two copies never share a span.
        Map<String, Set<String>> traceparents = new HashMap<>();
        for (GetResponse delivery : run.queue().drain()) {
            String traceparent = String.valueOf(delivery.getProps().getHeaders().get(MessageHeaders.TRACEPARENT));
            assertThat(traceparent).startsWith("00-" + TRACE_ID + "-").isNotEqualTo(ROW_TRACEPARENT);
            traceparents.computeIfAbsent(delivery.getProps().getMessageId(), id -> new HashSet<>()).add(traceparent);
        }
        run.queue().deliveriesById().forEach((id, copies) -> assertThat(traceparents.get(id)).as("spans of %s", id).hasSize(copies));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(collector.trace(TRACE_ID))
                .filteredOn(span -> span.name().equals("orders publish") && span.parentSpanId().equals(ROW_SPAN))
                .extracting(OtlpReceiver.ReceivedSpan::spanId)
                .as("the restarted relay's publish spans, exported")
                .containsAnyElementsOf(traceparents.values().stream().flatMap(Set::stream).map(t -> t.substring(36, 52)).toList()));
    }

    /**
     * The relay is killed after its last event and restarted on an outbox nobody writes to: it must
     * find its place in the WAL from heartbeats alone and let the slot move on. Debezium resumes at
     * the first COMMIT past its stored one; with a non-transactional heartbeat there was none, and a
     * relay restarted after a PostgreSQL restart searched, pinning the WAL, until the next order
     * (deploy/chaos/run --seed 6510). This test did not catch that timing on the old heartbeat; the
     * chaos seed did: it guards the idle restart, the seed the fix.
     */
    @Test
    void aRelayRestartedOnAnIdleOutboxResumesAndLetsItsSlotMoveOn() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.idle");
        String log = "relay-it-idle.log";
        config.put("relay.source.heartbeat-interval-ms", "1000");
        ServiceProcess relay = RelayProcess.start(config, log);
        relay.awaitReady(Duration.ofSeconds(60));
        List<String> expected = RelayFixture.insertOrderCreated(10, null);
        queue.awaitAll(expected);
        relay.kill();
        String walAfterStop = RelayFixture.currentWalPosition();

        ServiceProcess restarted = RelayProcess.start(config, log);
        try {
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250))
                    .until(() -> RelayFixture.slotConfirmedPast(walAfterStop));
        } finally {
            restarted.stopGracefully();
        }
    }

    private interface Interruption {
        void apply(ServiceProcess relay) throws Exception;
    }

    private record Run(QueueProbe queue, List<String> expected, int beforeRestart) {
        int duplicates() {
            return queue.messageIds().size() - queue.deliveriesById().size();
        }
    }

    /**
     * Starts the relay, writes events while it runs, interrupts it once {@value #MID_STREAM} have
     * arrived, starts a new one and waits until every event written has arrived.
     */
    private Run interruptMidStream(String name, Interruption interruption) throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it." + name);
        String log = "relay-it-" + name + ".log";
        ServiceProcess relay = RelayProcess.start(config, log);
        relay.awaitReady(Duration.ofSeconds(60));
        CompletableFuture<List<String>> writing = CompletableFuture.supplyAsync(RelayProcessIT::writeEvents);

        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> queue.arrived() >= MID_STREAM);
        interruption.apply(relay);
        int beforeRestart = queue.drainAll();
        List<String> expected = writing.get(120, TimeUnit.SECONDS);
        assertThat(beforeRestart).as("the relay was interrupted mid-stream").isLessThan(EVENTS);

        ServiceProcess restarted = RelayProcess.start(config, log);
        try {
            queue.awaitAll(expected);
        } finally {
            restarted.stopGracefully();
        }
        return new Run(queue, expected, beforeRestart);
    }

    private static List<String> writeEvents() {
        List<String> ids = new ArrayList<>(EVENTS);
        for (int i = 0; i < TRANSACTIONS; i++) {
            ids.addAll(RelayFixture.insertOrderCreated(EVENTS / TRANSACTIONS, ROW_TRACEPARENT));
        }
        return ids;
    }
}
