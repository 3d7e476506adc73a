package dev.outboxinbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.ServiceProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The held aggregates (see {@link HeldAggregates}) where instances meet: the lock that keeps a republish
 * and a batch that parks, on different instances (the relays share the parking queue and any instance
 * answers POST /parked/republish), from interleaving. Without it, a batch could park an aggregate's later
 * event while a republish elsewhere writes that aggregate's still-stuck earlier one back behind it.
 */
class HeldAggregatesIT {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    final RelayProcesses relays = new RelayProcesses();

    /** A republish waits for a batch that holds or parks (its shared lock) to end, on whatever instance it runs. */
    @Test
    void aRepublishWaitsForABatchThatParksOnAnotherInstance() throws Exception {
        ServiceProcess relay = relays.start("held-aggregates-republish.log").awaitReady(Duration.ofSeconds(60));
        RelayFixture.insertRaw("unbound", "order-1", "OrderCreated");
        await().atMost(Duration.ofSeconds(20)).until(() -> BrokerAdmin.messages(Topology.RELAY_PARKING_QUEUE) == 1);

        CompletableFuture<HttpResponse<String>> republish;
        try (Connection otherInstance = RelayFixture.postgres().connect(RelayFixture.OFFSETS_DB)) {
            otherInstance.setAutoCommit(false);
            otherInstance.createStatement().execute("SELECT pg_advisory_xact_lock_shared(" + HeldAggregates.LOCK + ")");
            republish = HTTP.sendAsync(request(relay, "/parked/republish"), HttpResponse.BodyHandlers.ofString());
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5)).until(() -> !republish.isDone());
            otherInstance.commit();
        }
        HttpResponse<String> answer = republish.get();
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
        assertThat(JSON.readTree(answer.body()).path("stillParked")).hasSize(1);
    }

    /** A batch that parks waits for a republish (its exclusive lock) on another instance to end; the events behind flow after. */
    @Test
    void aBatchThatParksWaitsForARepublishOnAnotherInstance() throws Exception {
        QueueProbe orders = QueueProbe.bindOrders("held-aggregates.orders");
        relays.start("held-aggregates-park.log").awaitReady(Duration.ofSeconds(60));
        RelayFixture.RawEvent unroutable;
        List<String> behind;
        try (Connection otherInstance = RelayFixture.postgres().connect(RelayFixture.OFFSETS_DB)) {
            otherInstance.setAutoCommit(false);
            otherInstance.createStatement().execute("SELECT pg_advisory_xact_lock(" + HeldAggregates.LOCK + ")");
            unroutable = RelayFixture.insertRaw("unbound", "order-" + UUID.randomUUID(), "OrderCreated");
            behind = RelayFixture.insertOrderCreated(2, null);
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
                    .until(() -> BrokerAdmin.messages(Topology.RELAY_PARKING_QUEUE) == 0);
            otherInstance.commit();
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> BrokerAdmin.messages(Topology.RELAY_PARKING_QUEUE) == 1);
        orders.awaitAll(behind);
        await().atMost(Duration.ofSeconds(10)).until(() -> RelayFixture.slotConfirmedPast(unroutable.walPositionBeforeCommit()));
    }

    private static HttpRequest request(ServiceProcess relay, String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + relay.port() + path)).header("Authorization", OperationsAuth.operator())
                .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.noBody()).build();
    }
}
