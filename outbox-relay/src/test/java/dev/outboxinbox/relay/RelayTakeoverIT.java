package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.testing.ServiceProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How long a standby takes to publish after its leader fails, and what the handover costs, for three
 * faults: the leader killed (kill -9), frozen (SIGSTOP) past its lease and then woken, and deposed by
 * ending its lock session while its replication connection lives. Events are written all along.
 * Each test prints one line and appends it to {@code target/relay-takeover.txt}; it fails only on a
 * lost event.
 * <p>The frozen leader runs in every build. The other two, about a minute each, are tagged {@code long}:
 * {@code ./mvnw verify -Plong} runs them (so does {@code bash .ci/run --long}); every build tests those
 * handovers in RelayStandbyIT (session ended, then kill -9), without the side-by-side figure.
 */
class RelayTakeoverIT {

    private static final int PER_TRANSACTION = 50;
    private static final int MID_STREAM = 1_000;
    /** How long the frozen leader stays frozen: past its lease (relay.leadership.lease, 10 s). */
    private static final Duration FROZEN = Duration.ofSeconds(20);
    private static final Pattern PUBLISHED = Pattern.compile("(?m)^outbox_relay_events_published_total(\\{[^}]*\\})? ([0-9.E]+)$");

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();
    private final ScheduledExecutorService signals = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void noMoreSignals() {
        signals.shutdownNow();
    }

    @Test
    @Tag("long")
    void leaderKilled() throws Exception {
        measure("kill-9", leader -> leader.kill());
    }

    @Test
    void leaderFrozenPastItsLeaseThenWoken() throws Exception {
        measure("sigstop-" + FROZEN.toSeconds() + "s", leader -> {
            signal("STOP", leader);
            signals.schedule(() -> signal("CONT", leader), FROZEN.toMillis(), TimeUnit.MILLISECONDS);
        });
    }

    @Test
    @Tag("long")
    void leaderDeposedWhileItsReplicationConnectionLives() throws Exception {
        measure("lock-session-ended", leader -> RelayFixture.postgres().execute("postgres",
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'outbox-relay/takeover-a'"));
    }

    private interface Fault {
        void inject(ServiceProcess leader) throws Exception;
    }

    private void measure(String fault, Fault inject) throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-takeover");
        ServiceProcess a = start("takeover-a").awaitReady(Duration.ofSeconds(60));
        ServiceProcess b = start("takeover-b").awaitReady(Duration.ofSeconds(60));
        AtomicBoolean writing = new AtomicBoolean(true);
        CompletableFuture<List<String>> written = CompletableFuture.supplyAsync(() -> writeWhile(writing));
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> queue.arrived() >= MID_STREAM);

        long faultAt = System.nanoTime();
        inject.inject(a);
        await().atMost(Duration.ofSeconds(150)).pollInterval(Duration.ofMillis(50)).until(() -> published(b) > 0);
        double takeoverSeconds = (System.nanoTime() - faultAt) / 1e9;
        // The new leader streams on for a while (and a woken leader has woken), then the writer stops.
        long handedOver = queue.arrived();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                .until(() -> queue.arrived() > handedOver + MID_STREAM && System.nanoTime() - faultAt > FROZEN.toNanos() + 5e9);
        writing.set(false);
        List<String> expected = written.get(60, TimeUnit.SECONDS);

        try {
            queue.awaitAll(expected);
        } catch (org.awaitility.core.ConditionTimeoutException incomplete) {
            // counted below
        }
        Set<String> received = new HashSet<>(queue.messageIds());
        long lost = expected.stream().filter(id -> !received.contains(id)).count();
        int duplicates = queue.messageIds().size() - received.size();
        String line = String.format("[takeover] %-20s fault → standby's first event %5.1f s; %d events, %d lost, %d duplicates",
                fault, takeoverSeconds, expected.size(), lost, duplicates);
        System.out.println(line);
        Files.writeString(Path.of("target", "relay-takeover.txt"), line + System.lineSeparator(),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        assertThat(lost).as("events lost").isZero();
    }

    /** Events the broker confirmed for this relay, from its metrics; 0 if it does not answer. */
    private static double published(ServiceProcess relay) {
        try {
            String body = RelayProcesses.get(relay, "/q/metrics", Duration.ofSeconds(2)).body();
            Matcher matcher = PUBLISHED.matcher(body);
            return matcher.find() ? Double.parseDouble(matcher.group(2)) : 0;
        } catch (Exception e) {
            return 0;
        }
    }

    private static void signal(String signal, ServiceProcess relay) {
        RelayProcesses.signal(signal, relay);
    }

    private ServiceProcess start(String instance) throws Exception {
        return relays.startInstance(instance);
    }

    private static List<String> writeWhile(AtomicBoolean writing) {
        List<String> ids = new ArrayList<>();
        while (writing.get()) {
            ids.addAll(RelayFixture.insertOrderCreated(PER_TRANSACTION, null));
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // about 500 events/s
        }
        return ids;
    }
}
