package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.testing.ServiceProcess;
import io.debezium.embedded.EmbeddedWorkerConfig;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A deposed leader must not act on what it read while it led (issue 27, item 2). One test per
 * suspected defect, each deterministic: the deposed leader is made to act after the new leader's
 * term began, and what it does must change nothing the new leader relies on.
 */
class RelayFencingIT {

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();
    private final List<RelayLeadership> inProcess = new ArrayList<>();

    @AfterEach
    void releaseTheInProcessLeaders() {
        inProcess.forEach(RelayLeadership::release);
    }

    /**
     * Defect 1: a deposed leader's SlotRecovery acts on a stale reading. Here: its engine had failed on
     * "publication does not exist" while it led, so it drops the slot as one made before its publication;
     * by then the new leader has made a slot of its own and events were committed into it.
     */
    @Test
    void aDeposedLeadersRepairDoesNotDropTheNewLeadersSlot() throws Exception {
        RelayLeadership a = leadership("fence-a");
        a.awaitLeadership(() -> false);
        SlotRecovery recoveryA = new SlotRecovery(configOf("fence-a"), null, new RelayStatus(), null, a);
        RuntimeException staleFailure = new RuntimeException(
                "ERROR: publication \"outbox_publication\" does not exist (seen while fence-a led)");

        depose("fence-a");
        RelayLeadership b = leadership("fence-b");
        b.awaitLeadership(() -> false);
        await().atMost(Duration.ofSeconds(10)).until(() -> !a.isLeader());
        new SlotRecovery(configOf("fence-b"), null, new RelayStatus(), null, b).ensureSlotAndRecover();
        String slotBefore = slotIdentity();
        assertThat(slotBefore).isNotNull();
        RelayFixture.insertOrderCreated(5, null); // in the new leader's slot only

        String refused = "not refused";
        try {
            recoveryA.dropSlotOlderThanItsPublication(staleFailure);
        } catch (Exception e) {
            refused = e.toString();
        }
        System.out.printf("[fencing 1] deposed leader's slot repair: %s; slot before %s, after %s%n", refused, slotBefore,
                slotIdentity());
        assertThat(slotIdentity()).as("the new leader's slot (confirmed position, catalog xmin)").isEqualTo(slotBefore);
        assertThat(RelayFixture.postgres().query(RelayFixture.OFFSETS_DB,
                "SELECT count(*) FROM relay_slot_recovery")).as("recovery markers the deposed leader wrote").isEqualTo("0");
    }

    /**
     * Defect 2: a relay deposed before its engine starts (here while its recovery reads the outbox
     * table) starts streaming anyway, as a standby, next to whoever leads now.
     */
    @Test
    void aRelayDeposedBeforeItsEngineStartsDoesNotStream() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-fencing.stepped-down");
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "SELECT pg_create_logical_replication_slot('" + RelayFixture.SLOT + "', 'pgoutput')");
        try (Connection tableLock = RelayFixture.postgres().connect(RelayFixture.SOURCE_DB);
             Connection newLeader = RelayFixture.postgres().connect(RelayFixture.OFFSETS_DB)) {
            tableLock.setAutoCommit(false);
            tableLock.createStatement().execute("LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE");
            ServiceProcess a = start("fence-stream-a");
            // No stored offset: its recovery reads the outbox table, and waits for the lock.
            await().atMost(Duration.ofSeconds(60)).until(() -> !RelayFixture.postgres().query(RelayFixture.SOURCE_DB,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = '"
                            + RelayFixture.ROLE + "' AND wait_event_type = 'Lock'").equals("0"));
            // Deposed: its lock session ends and another holder takes the lock (and a term of its own, where there are terms).
            depose("fence-stream-a");
            try (Statement s = newLeader.createStatement()) {
                s.execute("DO $$ BEGIN IF to_regclass('relay_leadership') IS NOT NULL THEN"
                        + " UPDATE relay_leadership SET epoch = epoch + 1, holder = 'the test' WHERE slot_name = '"
                        + RelayFixture.SLOT + "'; END IF; END $$");
                s.execute("SELECT pg_advisory_lock(hashtextextended('outbox-relay:" + RelayFixture.SLOT + "', 0))");
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> RelayProcesses.health(a).contains("\"lastStepDown\""));
            tableLock.rollback();

            List<String> ids = RelayFixture.insertOrderCreated(10, null);
            long publishedByTheDeposed = 0;
            try {
                await().during(Duration.ofSeconds(8)).atMost(Duration.ofSeconds(10)).until(() -> queue.arrived() == 0);
            } catch (org.awaitility.core.ConditionTimeoutException streamed) {
                publishedByTheDeposed = queue.arrived();
            }
            System.out.printf("[fencing 2] deposed before its engine started: %d of %d events published by it while"
                    + " another held the lock%n", publishedByTheDeposed, ids.size());
            assertThat(publishedByTheDeposed).as("events published by a relay that no longer leads").isZero();

            newLeader.close(); // the lock is free again: the relay leads and publishes everything
            try {
                queue.awaitAll(ids);
            } catch (org.awaitility.core.ConditionTimeoutException stuck) {
                System.out.println("[fencing 2] not published after the lock was freed; the relay's threads:\n" + threads(a)
                        + "\nsessions: " + RelayFixture.postgres().query("postgres", "SELECT string_agg(datname || ' '"
                        + " || coalesce(application_name, '') || ' ' || state || ' ' || coalesce(wait_event_type, '') || ' '"
                        + " || left(query, 80), E'\\n') FROM pg_stat_activity WHERE usename = '" + RelayFixture.ROLE + "'"));
                throw stuck;
            }
        }
    }

    /**
     * Defect 3: a deposed leader's late offset write. Its offset store, loaded while it led, writes its
     * stale offsets after the next leader moved on; the next start must neither go back nor take the
     * slot for recreated and republish the whole outbox.
     */
    @Test
    void aDeposedLeadersLateOffsetWriteDoesNotMoveTheNewLeadersOffsets() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-fencing.late-offsets");
        List<String> expected = new ArrayList<>();
        runOnce("fence-offsets-1", queue, expected, 20);

        RelayLeadership a = leadership("fence-offsets-a");
        a.awaitLeadership(() -> false);
        Properties engineA = engineProperties(configOf("fence-offsets-a"), a);
        OffsetBackingStore storeA = (OffsetBackingStore) Class.forName(engineA.getProperty("offset.storage"))
                .getDeclaredConstructor().newInstance();
        Map<String, String> workerConfig = new HashMap<>();
        engineA.stringPropertyNames().forEach(key -> workerConfig.put(key, engineA.getProperty(key)));
        storeA.configure(new EmbeddedWorkerConfig(workerConfig));
        storeA.start();
        Map<ByteBuffer, ByteBuffer> staleOffsets = storedOffsets();
        depose("fence-offsets-a");
        await().atMost(Duration.ofSeconds(10)).until(() -> !a.isLeader());

        runOnce("fence-offsets-2", queue, expected, 20);
        Map<ByteBuffer, ByteBuffer> newOffsets = storedOffsets();

        String refused = "not refused";
        try {
            storeA.set(staleOffsets, null).get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            refused = e.toString();
        } finally {
            storeA.stop();
        }
        boolean movedBack = !storedOffsets().equals(newOffsets);

        int before = queue.messageIds().size();
        runOnce("fence-offsets-3", queue, expected, 1);
        int republished = queue.messageIds().size() - before - 1;
        System.out.printf("[fencing 3] deposed leader's late offset write: %s; stored offsets moved back: %s;"
                + " the next start republished %d events (of %d in the outbox)%n", refused, movedBack, republished,
                expected.size());
        assertThat(movedBack).as("the new leader's offsets overwritten by the deposed one's").isFalse();
        assertThat(republished).as("events republished by the next start").isZero();
    }

    /** Starts a relay, writes {@code more} events, waits for everything expected, stops it gracefully. */
    private void runOnce(String instance, QueueProbe queue, List<String> expected, int more) throws Exception {
        ServiceProcess relay = start(instance).awaitReady(Duration.ofSeconds(60));
        try {
            expected.addAll(RelayFixture.insertOrderCreated(more, null));
            queue.awaitAll(expected);
        } finally {
            relay.stopGracefully();
            relays.forget(relay);
        }
    }

    private Map<ByteBuffer, ByteBuffer> storedOffsets() throws Exception {
        Map<ByteBuffer, ByteBuffer> offsets = new HashMap<>();
        try (Connection c = RelayFixture.postgres().connect(RelayFixture.OFFSETS_DB);
             ResultSet rs = c.createStatement().executeQuery("SELECT offset_key, offset_val FROM relay_offsets")) {
            while (rs.next()) {
                offsets.put(ByteBuffer.wrap(rs.getString(1).getBytes(StandardCharsets.UTF_8)),
                        ByteBuffer.wrap(rs.getString(2).getBytes(StandardCharsets.UTF_8)));
            }
        }
        assertThat(offsets).isNotEmpty();
        return offsets;
    }

    /** The engine's configuration for the deposed leader's term, as RelayEngine builds it. */
    private static Properties engineProperties(RelayConfig config, RelayLeadership leadership) {
        return DebeziumProperties.of(config, leadership.term());
    }

    /** The slot's position and catalog xmin: a slot dropped and made again differs in both. */
    private static String slotIdentity() {
        String identity = RelayFixture.postgres().query(RelayFixture.SOURCE_DB,
                "SELECT confirmed_flush_lsn::text || ' ' || catalog_xmin::text FROM pg_replication_slots WHERE slot_name = '"
                        + RelayFixture.SLOT + "'");
        return identity == null || identity.isBlank() ? null : identity;
    }

    /** Ends the instance's lock session, as a network cut or an administrator would: its lock goes with it. */
    private static void depose(String instance) {
        RelayFixture.postgres().execute("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                + " WHERE application_name = 'outbox-relay/" + instance + "'");
    }

    private RelayLeadership leadership(String instance) {
        RelayLeadership leadership = new RelayLeadership(configOf(instance));
        inProcess.add(leadership);
        return leadership;
    }

    /** The relay's configuration as the packaged relay reads it, for an instance run inside the test. */
    private RelayConfig configOf(String instance) {
        Map<String, String> own = new LinkedHashMap<>(relays.config());
        own.put("relay.leadership.instance", instance);
        return new SmallRyeConfigBuilder().withMapping(RelayConfig.class)
                .withSources(new PropertiesConfigSource(own, "relay-fencing-test", 500))
                .build().getConfigMapping(RelayConfig.class);
    }

    private ServiceProcess start(String instance) throws Exception {
        return relays.startInstance(instance);
    }

    /** A thread dump of the relay, for a test that finds it stuck. */
    private static String threads(ServiceProcess relay) {
        try {
            Process jcmd = new ProcessBuilder("jcmd", String.valueOf(relay.pid()), "Thread.print").redirectErrorStream(true).start();
            String dump = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            jcmd.waitFor(10, TimeUnit.SECONDS);
            return dump;
        } catch (Exception e) {
            return "no thread dump: " + e;
        }
    }
}
