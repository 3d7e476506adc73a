package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay that cannot set up its parking place fails every start, and retries: each failed start must
 * leave nothing behind (connection, channel, thread), or a day of retries exhausts the broker's
 * connections, everyone's included. The broker's own count is the judge.
 */
class FailedStartsIT {

    private static final String USER = "relay-failed-starts-test";
    private static final String PASSWORD = "relay-failed-starts-secret";

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();

    @BeforeEach
    void aRelayOfItsOwnUser() {
        Map<String, String> config = relays.config();
        config.put("relay.broker.user", USER);
        config.put("relay.broker.password", PASSWORD);
        config.put("relay.publishing.initial-backoff", "PT0.05S");
        config.put("relay.publishing.max-backoff", "PT0.2S");
    }

    @AfterEach
    void deleteTheUser() {
        BrokerAdmin.deleteUser(USER);
    }

    @Test
    void startsRefusedTheParkingQueueLeaveAtMostOneConnection() throws Exception {
        BrokerAdmin.user(USER, PASSWORD, "^orders$", "^orders$", "^$");
        failStartsAndCountConnections("no-permission", "ACCESS_REFUSED");
    }

    @Test
    void startsRefusedByAParkingExchangeOfAnotherTypeLeaveAtMostOneConnection() throws Exception {
        BrokerAdmin.user(USER, PASSWORD, ".*", ".*", ".*");
        try (var connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             var channel = connection.createChannel()) {
            channel.exchangeDeclare(Topology.RELAY_PARKING_EXCHANGE, BuiltinExchangeType.TOPIC, true);
        }
        failStartsAndCountConnections("wrong-type", "PRECONDITION_FAILED");
    }

    private void failStartsAndCountConnections(String name, String brokerSays) throws Exception {
        RelayFixture.insertOrderCreated(1, null); // something to publish, so the engine keeps trying
        // The count is the management API's: it must see a connection of this user that lives (as a leaked one would).
        var factory = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST);
        factory.setUsername(USER);
        factory.setPassword(PASSWORD);
        try (var held = factory.newConnection()) {
            await().atMost(Duration.ofSeconds(15)).until(() -> BrokerAdmin.connectionsOf(USER) == 1);
        }
        await().atMost(Duration.ofSeconds(15)).until(() -> BrokerAdmin.connectionsOf(USER) == 0);
        ServiceProcess relay = relays.start("relay-failed-starts-" + name + ".log");
        File log = new File("target", "relay-failed-starts-" + name + ".log");
        List<Integer> counts = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (System.nanoTime() < deadline) {
            counts.add(BrokerAdmin.connectionsOf(USER));
            await().pollDelay(Duration.ofMillis(500)).until(() -> true);
        }
        String health = RelayProcesses.get(relay, "/q/health/ready", Duration.ofSeconds(5)).body();
        long refusals = Pattern.compile(brokerSays).matcher(Files.readString(log.toPath())).results().count();
        System.out.printf("[failed starts, %s] %d refusals logged in 15 s; the user's connections, sampled every 0.5 s: %s%n",
                name, refusals, counts);
        assertThat(counts).as("the relay user's connections").allMatch(count -> count <= 1);
        assertThat(refusals).as("refusals logged: the relay kept trying").isGreaterThan(5);
        assertThat(health).as("readiness names the refusal").contains(brokerSays);
    }
}
