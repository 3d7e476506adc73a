package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.testing.ServiceProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two packaged relays on one slot, events written all along: one leads, the other waits. The slot
 * changes hands twice: the leader's database session is ended (it must step down and the standby
 * take over), then the new leader is killed (the first, standby now, takes over again). No event is
 * lost, the copies are at most a batch per handover, and the two are never both ready as leader.
 */
class RelayStandbyIT {

    /** Each of the writer's transactions; it writes until the test has seen both handovers. */
    private static final int PER_TRANSACTION = 50;
    private static final int MID_STREAM = 2_000;
    /** The relay's default batch (relay.source.max-batch-size): what a deposed leader may have had in hand. */
    private static final int ONE_BATCH = 2_048;
    /**
     * What a leader may have confirmed and not yet written as its offset: one commit interval
     * (relay.offsets.commit-interval, 0.1 s) at 20,000 events/s, twice what deploy/benchmarks measures it draining.
     */
    private static final int ONE_COMMIT_INTERVAL = 2_000;
    private static final Pattern ROLE = Pattern.compile("\"role\"\\s*:\\s*\"(\\w+)\"");

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();

    @Test
    void theSlotChangesHandsWhenTheLeaderLosesItsSessionAndWhenItIsKilled() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-standby");
        // An event an hour old, published at the first start: from then on it is no one's lag, the standby's neither.
        List<String> old = RelayFixture.insertOrderCreated(1, null);
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "UPDATE outbox SET occurred_at = now() - interval '1 hour' WHERE id = '" + old.get(0) + "'");
        List<ServiceProcess> pair = startLeaderAndStandby("standby");
        ServiceProcess first = pair.get(0);
        ServiceProcess second = pair.get(1);
        RoleWatch watch = RoleWatch.start(first, second);
        AtomicBoolean writing = new AtomicBoolean(true);
        CompletableFuture<List<String>> written = CompletableFuture.supplyAsync(() -> writeWhile(writing));
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> queue.arrived() >= MID_STREAM);
        // The standby reads the lag from the leader's stored offset, not from an hour-old row.
        await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(oldestUnpublishedSeconds(second)).isBetween(0.0, 60.0));

        // 1. The leader's session ends, as a network cut or an administrator would end it: the lock goes with it.
        RelayFixture.postgres().execute("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                + " WHERE application_name = 'outbox-relay/relay-standby-a'");
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
            assertThat(role(first)).isEqualTo("standby");
            assertThat(role(second)).isEqualTo("leader");
        });
        // Once it asks again (three heartbeats after stepping down) it knows who leads.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(health(first)).contains("\"lastStepDown\"", "relay-standby-b"));
        long handedOver = queue.arrived();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> queue.arrived() > handedOver + MID_STREAM);

        // 2. The new leader is killed: the first one, standby now, takes over again.
        second.kill();
        long killedAt = System.nanoTime();
        // What the killed leader had sent is in the queue within moments; from then on, only the new leader adds.
        AtomicLong beforeKill = new AtomicLong(-1);
        await().pollInterval(Duration.ofMillis(50)).atMost(Duration.ofSeconds(10)).until(() -> {
            long now = queue.arrived();
            return beforeKill.getAndSet(now) == now; // the same count twice, 50 ms apart
        });
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> queue.arrived() > beforeKill.get());
        double takeoverSeconds = (System.nanoTime() - killedAt) / 1e9;
        assertThat(role(first)).isEqualTo("leader");
        writing.set(false);
        List<String> expected = new ArrayList<>(written.get(60, TimeUnit.SECONDS));
        expected.addAll(old);
        queue.awaitAll(expected);
        watch.stop();

        int duplicates = queue.messageIds().size() - queue.deliveriesById().size();
        System.out.printf("[standby] %d events; takeover after a kill -9 %.1f s (kill → first event from the new leader);"
                + " %d duplicates over both handovers; %d role samples, both leading in %d%n",
                expected.size(), takeoverSeconds, duplicates, watch.samples(), watch.bothLeading());
        assertThat(new HashSet<>(queue.messageIds())).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(duplicates).as("copies: what a deposed leader had published but not committed")
                .isLessThanOrEqualTo(2 * (ONE_BATCH + ONE_COMMIT_INTERVAL));
        assertThat(takeoverSeconds).as("kill → first event from the standby").isLessThan(15);
        assertThat(watch.samples()).isGreaterThan(10);
        assertThat(watch.bothLeading()).as("samples with both relays ready as leader").isZero();
    }

    /** relay-{name}-a first, leading once ready; then relay-{name}-b, ready as its standby: [a, b]. */
    private List<ServiceProcess> startLeaderAndStandby(String name) throws Exception {
        ServiceProcess a = start("relay-" + name + "-a");
        a.awaitReady(Duration.ofSeconds(60));
        assertThat(role(a)).isEqualTo("leader");
        ServiceProcess b = start("relay-" + name + "-b");
        b.awaitReady(Duration.ofSeconds(60));
        assertThat(role(b)).isEqualTo("standby");
        assertThat(health(b)).contains("relay-" + name + "-a");
        assertThat(metrics(a)).containsPattern("(?m)^outbox_relay_leader(\\{[^}]*\\})? 1\\.0$");
        assertThat(metrics(b)).containsPattern("(?m)^outbox_relay_leader(\\{[^}]*\\})? 0\\.0$");
        return List.of(a, b);
    }

    private ServiceProcess start(String instance) throws Exception {
        return relays.startInstance(instance);
    }

    private static String health(ServiceProcess relay) {
        return RelayProcesses.health(relay);
    }

    private static final Pattern OLDEST_UNPUBLISHED = Pattern.compile("oldest unpublished event ([0-9.]+) s old");

    /** The age of the oldest unpublished event, as the relay's readiness tells it; -1 if it does not. */
    private static double oldestUnpublishedSeconds(ServiceProcess relay) {
        Matcher matcher = OLDEST_UNPUBLISHED.matcher(health(relay));
        return matcher.find() ? Double.parseDouble(matcher.group(1)) : -1;
    }

    private static String metrics(ServiceProcess relay) throws Exception {
        return RelayProcesses.metrics(relay);
    }

    private static boolean readyAsLeader(ServiceProcess relay) {
        try {
            HttpResponse<String> response = RelayProcesses.get(relay, "/q/health/ready", Duration.ofSeconds(2));
            return response.statusCode() == 200 && "leader".equals(roleIn(response.body()));
        } catch (Exception e) {
            return false;
        }
    }

    private static String role(ServiceProcess relay) {
        return roleIn(health(relay));
    }

    private static String roleIn(String body) {
        Matcher matcher = ROLE.matcher(body);
        return matcher.find() ? matcher.group(1) : "none";
    }

    /** Samples both relays' readiness every 100 ms, counting the samples in which both are ready as leader. */
    private static final class RoleWatch {
        private final AtomicInteger samples = new AtomicInteger();
        private final AtomicInteger bothLeading = new AtomicInteger();
        private volatile boolean running = true;
        private Thread thread;

        static RoleWatch start(ServiceProcess a, ServiceProcess b) {
            RoleWatch watch = new RoleWatch();
            watch.thread = new Thread(() -> {
                while (watch.running) {
                    boolean aLeads = readyAsLeader(a);
                    boolean bLeads = readyAsLeader(b);
                    watch.samples.incrementAndGet();
                    if (aLeads && bLeads) {
                        watch.bothLeading.incrementAndGet();
                    }
                    try {
                        TimeUnit.MILLISECONDS.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "role-watch");
            watch.thread.start();
            return watch;
        }

        void stop() throws InterruptedException {
            running = false;
            thread.join(5_000);
        }

        int samples() {
            return samples.get();
        }

        int bothLeading() {
            return bothLeading.get();
        }
    }

    /** Commits outbox rows, {@value #PER_TRANSACTION} a transaction, until told to stop; returns their ids. */
    private static List<String> writeWhile(AtomicBoolean writing) {
        List<String> ids = new ArrayList<>();
        while (writing.get()) {
            ids.addAll(RelayFixture.insertOrderCreated(PER_TRANSACTION, null));
        }
        return ids;
    }
}
