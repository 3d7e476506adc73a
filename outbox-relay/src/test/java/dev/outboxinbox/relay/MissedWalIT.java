package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.testing.ServiceProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Events committed while no slot was keeping the WAL for the relay: before its first start, and
 * while its slot was gone (dropped by a reset, lost in a failover, invalidated). The packaged
 * relay must find them in the outbox table and publish them; duplicates are fine, gaps are not.
 */
class MissedWalIT {

    private Map<String, String> config;

    @BeforeEach
    void freshWorld() {
        config = RelayFixture.prepare();
    }

    @AfterAll
    static void dropTheSlot() {
        RelayFixture.dropSlot();
    }

    @Test
    void eventsCommittedBeforeTheRelaysFirstStartArePublished() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.first-start");
        List<String> expected = new ArrayList<>(RelayFixture.insertOrderCreated(5, null));

        runUntilDelivered("relay-it-first-start.log", Duration.ofSeconds(60), queue, expected, 1);
        System.out.printf("[first start] 5 events before the relay's first start, 1 after: %d of %d delivered%n",
                new HashSet<>(queue.messageIds()).size(), expected.size());
    }

    /**
     * A slot made by hand after events were committed, and a relay that never stored an offset: what
     * a chaos run found (a relay killed before its first offset, its slot dropped and made again). The
     * relay cannot tell this slot from one made before the first event, so it republishes the table.
     */
    @Test
    void aRelayWithoutAStoredOffsetPublishesWhatANewerSlotDoesNotHold() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.no-offset-new-slot");
        List<String> expected = new ArrayList<>(RelayFixture.insertOrderCreated(5, null));
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "SELECT pg_create_logical_replication_slot('" + RelayFixture.SLOT + "', 'pgoutput')");

        runUntilDelivered("relay-it-no-offset-new-slot.log", Duration.ofSeconds(60), queue, expected, 1);
    }

    /**
     * What a chaos run found when the deployment made the slot with the databases: a slot made before
     * the publication cannot be decoded (pgoutput reads the catalog as it was at each WAL position), and
     * Debezium retried "publication does not exist" forever. The relay replaces such a slot and recovers.
     */
    @Test
    void aSlotMadeBeforeItsPublicationIsReplacedAndItsEventsRecovered() throws Exception {
        // As in a fresh deployment: the slot, then a write (Flyway's history row), then the migration's publication.
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB, "DROP PUBLICATION outbox_publication",
                "SELECT pg_create_logical_replication_slot('" + RelayFixture.SLOT + "', 'pgoutput')",
                "CREATE TABLE written_before_the_publication (id int)",
                "INSERT INTO written_before_the_publication VALUES (1)",
                "CREATE PUBLICATION outbox_publication FOR TABLE outbox WITH (publish = 'insert')");
        QueueProbe queue = QueueProbe.bindOrders("relay-it.slot-before-publication");
        List<String> expected = new ArrayList<>(RelayFixture.insertOrderCreated(5, null));

        runUntilDelivered("relay-it-slot-before-publication.log", Duration.ofSeconds(90), queue, expected, 1);
    }

    /**
     * Also the trace across a restart: the first 20 events, written in one traced request, are
     * published again from the table by the recovery, and every copy continues the row's trace in a
     * publish span of its own.
     */
    @Test
    void eventsCommittedWhileTheSlotWasGoneArePublishedWhenTheRelayComesBack() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.slot-lost");
        List<String> expected = new ArrayList<>();
        String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        String rowTraceparent = "00-" + traceId + "-00f067aa0ba902b7-01";
        runUntilDelivered("relay-it-slot-lost.log", Duration.ofSeconds(60), queue, expected, 20, rowTraceparent);
        List<String> traced = List.copyOf(expected);

        // What a failover to a standby (no slots in PostgreSQL 15) or a reset does: the slot is gone,
        // its offsets remain. These events are in the WAL, but no slot holds them for the relay.
        dropSlotOnceReleased();
        expected.addAll(RelayFixture.insertOrderCreated(20, null));

        runUntilDelivered("relay-it-slot-lost.log", Duration.ofSeconds(60), queue, expected, 20);

        Map<String, List<String>> copies = new HashMap<>();
        queue.drain().stream().filter(m -> traced.contains(m.getProps().getMessageId())).forEach(m -> copies
                .computeIfAbsent(m.getProps().getMessageId(), id -> new ArrayList<>())
                .add(String.valueOf(m.getProps().getHeaders().get(MessageHeaders.TRACEPARENT))));
        assertThat(copies).as("each traced event, published before the slot was lost and again by the recovery")
                .hasSize(traced.size()).allSatisfy((id, traceparents) -> assertThat(traceparents)
                        .hasSize(2).doesNotHaveDuplicates()
                        .allSatisfy(t -> assertThat(t).startsWith("00-" + traceId + "-").isNotEqualTo(rowTraceparent)));
    }

    @Test
    void aSlotRecreatedBehindTheRelaysBackIsNoticedAndTheGapPublished() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.slot-recreated");
        List<String> expected = new ArrayList<>();
        runUntilDelivered("relay-it-slot-recreated.log", Duration.ofSeconds(60), queue, expected, 20);

        // The reset runbook done halfway: the slot dropped and made again by hand, after more events.
        dropSlotOnceReleased();
        expected.addAll(RelayFixture.insertOrderCreated(20, null));
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "SELECT pg_create_logical_replication_slot('" + RelayFixture.SLOT + "', 'pgoutput')");

        runUntilDelivered("relay-it-slot-recreated.log", Duration.ofSeconds(60), queue, expected, 0);
    }

    /**
     * Starts the relay (ready within {@code ready}), commits {@code more} events while it streams,
     * waits until every expected event was delivered, and stops it gracefully, whatever happened.
     */
    private void runUntilDelivered(String log, Duration ready, QueueProbe queue, List<String> expected, int more)
            throws Exception {
        runUntilDelivered(log, ready, queue, expected, more, null);
    }

    private void runUntilDelivered(String log, Duration ready, QueueProbe queue, List<String> expected, int more,
                                   String traceparent) throws Exception {
        ServiceProcess relay = RelayProcess.start(config, log).awaitReady(ready);
        try {
            if (more > 0) {
                expected.addAll(RelayFixture.insertOrderCreated(more, traceparent));
            }
            awaitDelivered(queue, expected);
        } finally {
            relay.stopGracefully();
        }
    }

    /** The stopped relay's walsender lets go of the slot a moment after the process exits. */
    private static void dropSlotOnceReleased() {
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            RelayFixture.dropSlot();
            return RelayFixture.postgres().query(RelayFixture.SOURCE_DB,
                    "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + RelayFixture.SLOT + "'").equals("0");
        });
    }

    private static void awaitDelivered(QueueProbe queue, List<String> expected) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250)).untilAsserted(() -> {
            queue.drain();
            assertThat(new HashSet<>(queue.messageIds())).containsAll(expected);
        });
    }
}
