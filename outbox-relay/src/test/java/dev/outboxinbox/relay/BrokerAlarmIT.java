package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.testing.BrokerControl;
import dev.outboxinbox.testing.ServiceProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A broker that blocks publishing (a memory alarm) must not hang the relay's readiness probe, nor its
 * stop: a probe that hangs is a probe that kills the pod, and a stop that waits for the alarm to clear
 * is a stop that ends in SIGKILL. The alarm is global: this test raises it only while it holds the tests'
 * lock (every run of the suite does) and puts the watermark back in {@code finally}.
 */
class BrokerAlarmIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern NUMBER = Pattern.compile("(?m)^\\s*([0-9.]+)\\s*$");

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();

    @Test
    void readinessAnswersAndAStopFinishesWhileAMemoryAlarmBlocksPublishingAndNothingIsLost() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-alarm");
        ServiceProcess relay = start("relay-alarm.log");
        List<String> expected = new ArrayList<>(RelayFixture.insertOrderCreated(1, null));
        queue.awaitAll(expected);

        BrokerControl broker = RelayFixture.rabbitMq().control();
        String watermark = currentWatermark(broker);
        broker.rabbitmqctlOrFail("set_vm_memory_high_watermark", "0");
        long stopMillis;
        try {
            expected.addAll(RelayFixture.insertOrderCreated(5, null));
            // Publishing is blocked: the relay says so, and says it at once, every time it is asked.
            long deadline = System.nanoTime() + Duration.ofSeconds(12).toNanos();
            long slowest = 0;
            List<String> brokerStates = new ArrayList<>();
            while (System.nanoTime() < deadline) {
                long asked = System.nanoTime();
                HttpResponse<String> ready = get(relay, "/q/health/ready");
                long took = System.nanoTime() - asked;
                slowest = Math.max(slowest, took);
                assertThat(Duration.ofNanos(took)).as("readiness while publishing is blocked").isLessThan(Duration.ofSeconds(2));
                brokerStates.add(JSON.readTree(ready.body()).path("checks").get(0).path("data").path("broker").asText());
                await().pollDelay(Duration.ofMillis(250)).until(() -> true);
            }
            System.out.printf("[memory alarm] slowest readiness %d ms over %d probes; broker: %s%n",
                    slowest / 1_000_000, brokerStates.size(), new java.util.LinkedHashSet<>(brokerStates));
            assertThat(brokerStates).as("a blocked broker is not an unreachable one").noneMatch(s -> s.contains("unreachable"));
            assertThat(brokerStates.get(brokerStates.size() - 1)).startsWith("blocked");
            assertThat(queue.drain().size()).as("nothing is published during the alarm").isEqualTo(1);

            long stopping = System.nanoTime();
            relay.stopGracefully();
            stopMillis = (System.nanoTime() - stopping) / 1_000_000;
        } finally {
            broker.rabbitmqctlOrFail("set_vm_memory_high_watermark", watermark);
        }
        System.out.printf("[memory alarm] the relay stopped %d ms after SIGTERM%n", stopMillis);
        assertThat(stopMillis).as("a stop during the alarm (ms)").isLessThan(15_000);

        // The batch in hand was not committed: the next start publishes it.
        start("relay-alarm-restart.log");
        queue.awaitAll(expected);
        assertThat(new java.util.HashSet<>(queue.messageIds())).containsExactlyInAnyOrderElementsOf(expected);
    }

    private ServiceProcess start(String log) throws Exception {
        return relays.start(log).awaitReady(Duration.ofSeconds(60));
    }

    /** The relative watermark the broker runs with now, to put it back ("0.4" if it is not a plain fraction). */
    private static String currentWatermark(BrokerControl broker) {
        BrokerControl.Result result = broker.rabbitmqctl("eval", "vm_memory_monitor:get_vm_memory_high_watermark().");
        Matcher number = NUMBER.matcher(result.output());
        return result.exitCode() == 0 && number.find() ? number.group(1) : "0.4";
    }

    private static HttpResponse<String> get(ServiceProcess relay, String path) throws Exception {
        return RelayProcesses.get(relay, path, Duration.ofSeconds(30));
    }
}
