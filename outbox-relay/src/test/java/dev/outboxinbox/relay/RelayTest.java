package dev.outboxinbox.relay;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.contains;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.OperationsAuth;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.config.HttpClientConfig;
import io.restassured.config.RestAssuredConfig;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay running in-process against the real PostgreSQL and RabbitMQ. */
@QuarkusTest
@WithTestResource(RelayTestResource.class)
class RelayTest {

    @BeforeEach
    void relayIsStreaming() {
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                given().get("/q/health/ready").then().statusCode(200));
    }

    @Test
    void anOutboxRowArrivesOnceWithItsPropertiesAndHeaders() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-test.single");
        String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        String eventId = RelayFixture.insertOrderCreated(1, traceparent).get(0);

        await().atMost(Duration.ofSeconds(30)).until(() -> queue.drain().size() == 1);
        // Once: nothing more arrives while the relay goes on committing heartbeats and batches.
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).until(() -> queue.drain().size() == 1);

        GetResponse message = queue.drain().get(0);
        AMQP.BasicProperties props = message.getProps();
        assertThat(props.getMessageId()).isEqualTo(eventId);
        assertThat(props.getType()).isEqualTo(OrderCreated.TYPE);
        assertThat(props.getContentType()).isEqualTo("application/json");
        assertThat(props.getDeliveryMode()).isEqualTo(2);
        assertThat(props.getTimestamp()).isNotNull();
        assertThat(message.getEnvelope().getExchange()).isEqualTo("orders");
        assertThat(message.getEnvelope().getRoutingKey()).isEqualTo(OrderCreated.TYPE);
        Map<String, Object> headers = props.getHeaders();
        assertThat(headers.get(MessageHeaders.SCHEMA_VERSION)).isEqualTo(OrderCreated.SCHEMA_VERSION);
        // The row's trace goes on, in a span of the relay's own (tracing makes spans even when it exports none).
        assertThat(headers.get(MessageHeaders.TRACEPARENT)).asString()
                .startsWith("00-4bf92f3577b34da6a3ce929d0e0e4736-").isNotEqualTo(traceparent);
        assertThat(headers.get(MessageHeaders.AGGREGATE_TYPE)).hasToString("orders");
        assertThat(headers.keySet()).as("Debezium's internal headers stay inside the relay")
                .noneMatch(name -> name.startsWith("__debezium"));
        OrderCreated event = EventJson.read(message.getBody(), OrderCreated.class);
        assertThat(event.eventId()).hasToString(eventId);
        assertThat(headers.get(MessageHeaders.AGGREGATE_ID)).hasToString(event.orderId().toString());
        assertThat(EventSchema.of(OrderCreated.TYPE, 1).orElseThrow().violations(message.getBody())).isEmpty();
    }

    @Test
    void walRecordsThatAreNotOutboxInsertsAreSkippedAndTheSlotMovesOn() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-test.foreign-wal");
        // Another tool's logical message, and a table someone added to the relay's publication.
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                "SELECT pg_logical_emit_message(true, 'another-tool', 'not an outbox event')",
                "SELECT pg_logical_emit_message(false, 'another-tool', 'nor this, outside a transaction')",
                "CREATE TABLE IF NOT EXISTS audit_log (id serial PRIMARY KEY, note text)",
                "ALTER PUBLICATION outbox_publication ADD TABLE audit_log",
                "INSERT INTO audit_log (note) VALUES ('not an outbox event either')");
        List<String> after = RelayFixture.insertOrderCreated(3, null);
        RelayFixture.RawEvent last = RelayFixture.insertRaw("orders", OrderCreated.TYPE);

        await().atMost(Duration.ofSeconds(30)).until(() -> queue.drain().size() == 4);
        assertThat(queue.messageIds()).containsAll(after).contains(last.id());
        await().atMost(Duration.ofSeconds(30)).until(() -> RelayFixture.slotConfirmedPast(last.walPositionBeforeCommit()));
        given().get("/q/health/ready").then().statusCode(200);
    }

    @Test
    void anUnroutableEventIsParkedWithItsReasonTheStreamMovesOnAndItIsRepublishedOnceAQueueIsBound() throws Exception {
        QueueProbe orders = QueueProbe.bindOrders("relay-test.behind-unroutable");
        RelayFixture.RawEvent unroutable = RelayFixture.insertRaw("unbound", "NobodyListens");
        List<String> behind = RelayFixture.insertOrderCreated(3, null);

        // Nothing waits behind it, and the slot moves past it.
        await().atMost(Duration.ofSeconds(30)).until(() -> new HashSet<>(orders.drain().stream()
                .map(r -> r.getProps().getMessageId()).toList()).containsAll(behind));
        await().atMost(Duration.ofSeconds(30)).until(() -> RelayFixture.slotConfirmedPast(unroutable.walPositionBeforeCommit()));
        given().get("/q/health/ready").then().statusCode(200)
                .body("checks[0].data.degraded", containsString(unroutable.id()))
                .body("checks[0].data.degraded", containsString("routing key NobodyListens"));

        // Parked, with why and where it was going.
        try (var connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
             var channel = connection.createChannel()) {
            GetResponse parked = channel.basicGet(Topology.RELAY_PARKING_QUEUE, false); // goes back when the channel closes
            assertThat(parked.getProps().getMessageId()).isEqualTo(unroutable.id());
            assertThat(parked.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)).asString().contains("unroutable");
            assertThat(parked.getProps().getHeaders().get(MessageHeaders.ORIGINAL_EXCHANGE)).hasToString("unbound");
            assertThat(parked.getProps().getHeaders().get(MessageHeaders.ORIGINAL_ROUTING_KEY)).hasToString("NobodyListens");
        }
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> given().header("Authorization", OperationsAuth.monitor()).get("/parked").then().body("parked", equalTo(1)));

        // Still nowhere to go: it stays parked.
        given().header("Authorization", OperationsAuth.operator()).post("/parked/republish").then().statusCode(200)
                .body("republished", equalTo(0)).body("stillParked.eventId", contains(unroutable.id()))
                .body("stillParked[0].reason", containsString("unroutable"));

        QueueProbe late = QueueProbe.bind("relay-test.late-binding", "unbound", "NobodyListens");
        given().header("Authorization", OperationsAuth.operator()).post("/parked/republish").then().statusCode(200).body("republished", equalTo(1));

        await().atMost(Duration.ofSeconds(30)).until(() -> late.drain().size() == 1);
        assertThat(late.messageIds()).containsExactly(unroutable.id());
        assertThat(late.drain().get(0).getProps().getHeaders()).as("the parking headers stay behind")
                .doesNotContainKeys(MessageHeaders.DEAD_LETTER_REASON, MessageHeaders.ORIGINAL_EXCHANGE);
        given().header("Authorization", OperationsAuth.monitor()).get("/parked").then().body("parked", equalTo(0));
    }

    @Inject
    ConfirmingPublisher publisher;

    /**
     * An order's creation and cancellation in one batch, while only cancellations are bound: the creation comes
     * back, and the cancellation, in the same batch, must not go before it: both are parked, in order. Sent
     * together (before the rounds), the cancellation reached its queue and only the creation was parked.
     */
    @Test
    void anAggregatesLaterEventInOneBatchDoesNotOvertakeItsEarlierOneThatCameBack() throws Exception {
        QueueProbe cancellations = QueueProbe.bind("relay-test.cancellations", "unbound", "OrderCancelled");
        String order = "order-" + UUID.randomUUID();
        OutboundMessage created = OutboundMessage.of(UUID.randomUUID().toString(), "unbound", order, "OrderCreated", 1, null,
                System.currentTimeMillis(), "{\"probe\": true}");
        OutboundMessage cancelled = OutboundMessage.of(UUID.randomUUID().toString(), "unbound", order, "OrderCancelled", 1, null,
                System.currentTimeMillis(), "{\"probe\": true}");
        try {
            List<BatchConfirms.Returned> parked = publisher.publish(List.of(created, cancelled));

            assertThat(parked).extracting(r -> r.message().eventId()).containsExactly(created.eventId(), cancelled.eventId());
            assertThat(parked.get(1).reason()).contains("held back behind parked event " + created.eventId());
            assertThat(cancellations.arrived()).as("cancellations that reached their queue").isZero();
        } finally {
            try (var connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
                 var channel = connection.createChannel()) {
                channel.queuePurge(Topology.RELAY_PARKING_QUEUE); // the other tests count what they park
            }
        }
    }

    /** A row that lacks what the contract needs (here its schema version, after a schema drifted) is parked, not looped on. */
    @Test
    void anOutboxRowMissingAFieldIsParkedWithTheReasonAndTheEventsBehindItFlow() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-test.behind-malformed");
        RelayFixture.postgres().execute(RelayFixture.SOURCE_DB, "ALTER TABLE outbox ALTER COLUMN schema_version DROP NOT NULL");
        String malformed = java.util.UUID.randomUUID().toString();
        try {
            RelayFixture.postgres().execute(RelayFixture.SOURCE_DB, """
                    INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)
                    VALUES ('%s', 'orders', 'agg-1', 'OrderCreated', NULL, '{"probe": true}', now())""".formatted(malformed));
            List<String> behind = RelayFixture.insertOrderCreated(3, null);

            await().atMost(Duration.ofSeconds(30)).until(() -> new HashSet<>(queue.drain().stream()
                    .map(r -> r.getProps().getMessageId()).toList()).containsAll(behind));
            assertThat(queue.messageIds()).doesNotContain(malformed);
            try (var connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
                 var channel = connection.createChannel()) {
                await().atMost(Duration.ofSeconds(10)).until(() -> channel.messageCount(Topology.RELAY_PARKING_QUEUE) > 0);
                List<GetResponse> parked = new java.util.ArrayList<>();
                for (GetResponse one; (one = channel.basicGet(Topology.RELAY_PARKING_QUEUE, false)) != null; ) {
                    parked.add(one); // all go back when the channel closes
                }
                assertThat(parked).filteredOn(p -> malformed.equals(p.getProps().getMessageId())).singleElement()
                        .satisfies(p -> assertThat(p.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON))
                                .asString().contains("malformed outbox row").contains(MessageHeaders.SCHEMA_VERSION));
            }
            given().get("/q/health/ready").then().statusCode(200).body("checks[0].data.degraded", containsString(malformed));

            // A republish leaves it parked (it cannot be sent as it is), and it holds nothing: its aggregate's next event flows.
            given().header("Authorization", OperationsAuth.operator()).post("/parked/republish").then().statusCode(200)
                    .body("stillParked.find { it.eventId == '" + malformed + "' }.reason", containsString("malformed outbox row"));
            String next = RelayFixture.insertRaw("orders", "agg-1", "OrderCreated").id();
            queue.awaitAll(List.of(next));
            assertThat(queue.messageIds()).doesNotContain(malformed);
        } finally {
            RelayFixture.postgres().execute(RelayFixture.SOURCE_DB,
                    "DELETE FROM outbox WHERE schema_version IS NULL", "ALTER TABLE outbox ALTER COLUMN schema_version SET NOT NULL");
            try (var connection = RelayFixture.rabbitMq().connectionFactory(RelayFixture.VHOST).newConnection();
                 var channel = connection.createChannel()) {
                channel.queuePurge(Topology.RELAY_PARKING_QUEUE); // the other tests count what they park
            }
        }
    }

    @Test
    void everyHttpErrorIsAProblemDocument() {
        given().get("/nothing/here").then().statusCode(404).contentType("application/problem+json")
                .body("status", equalTo(404));
        given().header("Authorization", OperationsAuth.operator()).delete("/parked").then().statusCode(405).contentType("application/problem+json");
        given().header("Authorization", OperationsAuth.monitor()).get("/parked").then().statusCode(200).body("queue", equalTo(Topology.RELAY_PARKING_QUEUE));
    }

    /**
     * The parked events and /q/metrics behind their door: nothing without a credential (a problem
     * document where the application answers), the monitor counts but republishes nothing, the
     * operator republishes; health stays open for the probes.
     */
    @Test
    void theParkedEventsAndTheMetricsAnswerOnlyTheirRoles() {
        given().get("/parked").then().statusCode(401).contentType("application/problem+json")
                .header("WWW-Authenticate", containsString("Basic")).body("status", equalTo(401));
        given().post("/parked/republish").then().statusCode(401).contentType("application/problem+json");
        given().header("Authorization", OperationsAuth.basic("operator", "not-the-password")).post("/parked/republish")
                .then().statusCode(401).contentType("application/problem+json");
        given().get("/q/metrics").then().statusCode(401);
        given().header("Authorization", OperationsAuth.monitor()).post("/parked/republish").then().statusCode(403)
                .contentType("application/problem+json").body("status", equalTo(403));
        given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200);
        given().header("Authorization", OperationsAuth.operator()).post("/parked/republish").then().statusCode(200)
                .body("republished", equalTo(0));
        given().get("/q/health/live").then().statusCode(200);
    }

    /**
     * The lag is read from the producer's database; a lock on the outbox (a migration, VACUUM FULL)
     * or a database that stops answering must not hang readiness and the metrics scrape with it.
     */
    @Test
    void aLockedOutboxTableDoesNotHangReadinessOrMetrics() throws Exception {
        RestAssuredConfig bounded = RestAssuredConfig.config().httpClient(HttpClientConfig.httpClientConfig()
                .setParam("http.socket.timeout", 20_000).setParam("http.connection.timeout", 5_000));
        try (Connection locker = RelayFixture.postgres().connect(RelayFixture.SOURCE_DB)) {
            locker.setAutoCommit(false);
            locker.createStatement().execute("LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE");

            await().atMost(Duration.ofSeconds(40)).untilAsserted(() -> given().config(bounded).get("/q/health/ready")
                    .then().body("checks[0].data.lag", containsString("cannot read the lag")));
            long start = System.nanoTime();
            given().config(bounded).header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200);
            given().config(bounded).get("/q/health/ready").then().body("checks[0].data.lag", containsString("cannot read the lag"));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
            locker.rollback();
        }
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready")
                .then().body("checks[0].data.lag", containsString("bytes of WAL retained")));
    }

    @Test
    void metricsAndHealthShowWhatWasPublishedAndHowFarBehindTheRelayIs() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-test.metrics");
        String before = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").asString();
        double publishedBefore = metric(before, "outbox_relay_events_published_total");
        long insertedAfter = System.currentTimeMillis();
        List<String> ids = RelayFixture.insertOrderCreated(5, null);
        long insertedBefore = System.currentTimeMillis();
        await().atMost(Duration.ofSeconds(30)).until(() -> queue.drain().size() == ids.size());
        // The commit time rides along, in milliseconds, for the consumer's commit → applied figure.
        assertThat(queue.drain()).allSatisfy(message -> assertThat(message.getProps().getHeaders().get(MessageHeaders.COMMITTED_AT))
                .isInstanceOf(Long.class).satisfies(committed -> assertThat((Long) committed)
                        .isBetween(insertedAfter - 1_000, insertedBefore + 1_000)));

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            String metrics = given().header("Authorization", OperationsAuth.monitor()).get("/q/metrics").then().statusCode(200).extract().asString();
            assertThat(metric(metrics, "outbox_relay_events_published_total")).isGreaterThanOrEqualTo(publishedBefore + 5);
            assertThat(metric(metrics, "outbox_relay_confirm_latency_seconds_count")).isPositive();
            assertThat(metric(metrics, "outbox_relay_batch_size_events_count")).isPositive();
            assertThat(metric(metrics, "outbox_relay_batch_size_events_max")).isBetween(1.0, 5.0);
            assertThat(metric(metrics, "outbox_relay_slot_retained_wal_bytes")).isPositive();
            assertThat(metric(metrics, "outbox_relay_oldest_unpublished_age_seconds")).isZero();
            // Each event's stages, from its commit: read by Debezium, handed to the relay, confirmed by the broker.
            List<String> stages = List.of("read", "handed", "confirmed");
            double[] took = new double[stages.size()];
            for (int i = 0; i < stages.size(); i++) {
                String timer = "outbox_relay_commit_to_" + stages.get(i) + "_seconds";
                assertThat(metric(metrics, timer + "_count") - metric(before, timer + "_count")).as(timer).isGreaterThanOrEqualTo(5);
                took[i] = metric(metrics, timer + "_sum") - metric(before, timer + "_sum");
            }
            assertThat(took[0]).as("read, then handed, then confirmed").isLessThanOrEqualTo(took[1]);
            assertThat(took[1]).isLessThan(took[2]);
            for (String name : List.of("outbox_relay_events_parked_total", "outbox_relay_events_recovered_total",
                    "outbox_relay_wal_records_skipped_total", "outbox_relay_batch_attempts_failed_total")) {
                assertThat(metric(metrics, name)).as(name).isGreaterThanOrEqualTo(0);
            }
        });
        given().get("/q/health/ready").then().statusCode(200)
                .body("checks[0].data.lag", containsString("bytes of WAL retained, oldest unpublished event 0.0 s old"));
    }

    /** The value of a Prometheus sample (the first series of that name). */
    private static double metric(String exposition, String name) {
        java.util.regex.Matcher sample = java.util.regex.Pattern.compile("(?m)^" + name + "(\\{[^}]*})? (\\S+)$").matcher(exposition);
        assertThat(sample.find()).as("%s on /q/metrics", name).isTrue();
        return Double.parseDouble(sample.group(2));
    }

    @Test
    void eventsWrittenWhileTheBrokerIsStoppedAreAllDeliveredOnceItIsBack() throws Exception {
        QueueProbe queue = QueueProbe.bindOrders("relay-test.broker-restart");
        List<String> expected = new java.util.ArrayList<>(RelayFixture.insertOrderCreated(200, null));
        await().atMost(Duration.ofSeconds(30)).until(() -> new HashSet<>(queue.drain().stream()
                .map(r -> r.getProps().getMessageId()).toList()).containsAll(expected));

        RelayFixture.rabbitMq().control().stopApp();
        try {
            expected.addAll(RelayFixture.insertOrderCreated(200, null));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    given().get("/q/health/ready").then().statusCode(503));
            expected.addAll(RelayFixture.insertOrderCreated(200, null));
        } finally {
            RelayFixture.rabbitMq().control().startApp();
        }

        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
            queue.drain();
            return new HashSet<>(queue.messageIds()).containsAll(expected);
        });
        assertThat(new HashSet<>(queue.messageIds())).hasSize(expected.size());
    }
}
