package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.testing.ServiceProcess;
import java.time.Duration;
import java.util.ArrayList;
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

        ServiceProcess relay = RelayProcess.start(config, "relay-it-first-start.log").awaitReady(Duration.ofSeconds(60));
        try {
            expected.addAll(RelayFixture.insertOrderCreated(1, null));
            awaitDelivered(queue, expected);
        } finally {
            relay.stopGracefully();
        }
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

        ServiceProcess relay = RelayProcess.start(config, "relay-it-no-offset-new-slot.log").awaitReady(Duration.ofSeconds(60));
        try {
            expected.addAll(RelayFixture.insertOrderCreated(1, null));
            awaitDelivered(queue, expected);
        } finally {
            relay.stopGracefully();
        }
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

        ServiceProcess relay = RelayProcess.start(config, "relay-it-slot-before-publication.log").awaitReady(Duration.ofSeconds(90));
        try {
            expected.addAll(RelayFixture.insertOrderCreated(1, null));
            awaitDelivered(queue, expected);
        } finally {
            relay.stopGracefully();
        }
    }

    @Test
    void eventsCommittedWhileTheSlotWasGoneArePublishedWhenTheRelayComesBack() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.slot-lost");
        List<String> expected = new ArrayList<>();
        ServiceProcess relay = RelayProcess.start(config, "relay-it-slot-lost.log").awaitReady(Duration.ofSeconds(60));
        expected.addAll(RelayFixture.insertOrderCreated(20, null));
        awaitDelivered(queue, expected);
        relay.stopGracefully();

        // What a failover to a standby (no slots in PostgreSQL 15) or a reset does: the slot is gone,
        // its offsets remain. These events are in the WAL, but no slot holds them for the relay.
        dropSlotOnceReleased();
        expected.addAll(RelayFixture.insertOrderCreated(20, null));

        relay = RelayProcess.start(config, "relay-it-slot-lost.log").awaitReady(Duration.ofSeconds(60));
        try {
            expected.addAll(RelayFixture.insertOrderCreated(20, null));
            awaitDelivered(queue, expected);
        } finally {
            relay.stopGracefully();
        }
    }

    @Test
    void aSlotRecreatedBehindTheRelaysBackIsNoticedAndTheGapPublished() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-it.slot-recreated");
        List<String> expected = new ArrayList<>();
        ServiceProcess relay = RelayProcess.start(config, "relay-it-slot-recreated.log").awaitReady(Duration.ofSeconds(60));
        expected.addAll(RelayFixture.insertOrderCreated(20, null));
        awaitDelivered(queue, expected);
        relay.stopGracefully();

        // The reset runbook done halfway: the slot dropped and made again by hand, after more events.
        dropSlotOnceReleased();
        expected.addAll(RelayFixture.insertOrderCreated(20, null));
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "SELECT pg_create_logical_replication_slot('" + RelayFixture.SLOT + "', 'pgoutput')");

        relay = RelayProcess.start(config, "relay-it-slot-recreated.log").awaitReady(Duration.ofSeconds(60));
        try {
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
