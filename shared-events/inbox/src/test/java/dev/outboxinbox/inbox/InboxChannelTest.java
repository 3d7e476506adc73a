package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.inbox.rabbitmq.InboxConsumers;
import io.micrometer.core.instrument.MeterRegistry;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The library as a new service uses it: a decoder, an {@code @Incoming @NonBlocking @Inbox} method on a
 * channel of the library's connector (two of them), their attributes, and nothing else (no migration of
 * its own for the inbox, no topology, no transport code). Against the real PostgreSQL and RabbitMQ:
 * the library declares the queue, creates its table, applies a message once however often it
 * comes, dead-letters, with a reason, what can never succeed, and holds a message through an outage
 * of the database without parking it.
 */
@QuarkusTest
@WithTestResource(GreetingTestResource.class)
class InboxChannelTest {

    private static final String GREETINGS_QUEUE = "greetings.inbox-test";
    private static final String GREETINGS_DEAD_LETTERS = GREETINGS_QUEUE + ".dead-letter";

    @Inject
    DataSource dataSource;

    @Inject
    InboxMetrics metrics;

    @Inject
    InboxConsumers consumers;

    @Inject
    MeterRegistry registry;

    @Test
    void aMessageDeliveredThreeTimesTakesEffectOnce() throws Exception {
        String id = UUID.randomUUID().toString();
        long duplicatesBefore = metrics.duplicates();
        for (int i = 0; i < 3; i++) {
            publish(id, "Greeted", 1, "hello " + id);
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.duplicates() - duplicatesBefore >= 2);
        assertThat(count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'")).isOne();
        assertThat(count("SELECT count(*) FROM inbox WHERE consumer = 'greeting-consumer.greetings' AND message_id = '" + id + "'")).isOne();
    }

    @Test
    void aHandlerThatChangesNothingCountsAsUnchangedNotAsADuplicateAndIsStillRemembered() throws Exception {
        String id = UUID.randomUUID().toString();
        long duplicatesBefore = metrics.duplicates();
        long unchangedBefore = metrics.unchanged();
        publish(id, "Greeted", 1, "no effect");
        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.unchanged() > unchangedBefore);
        assertThat(metrics.duplicates()).as("new to the inbox: not a duplicate").isEqualTo(duplicatesBefore);
        assertThat(count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'")).isZero();
        assertThat(count("SELECT count(*) FROM inbox WHERE message_id = '" + id + "'")).isOne();
    }

    /**
     * The message's trace reaches the method twice: as {@link InboxMetadata#traceparent()} and as the
     * current context, so a reply sent from the method continues it. This service records no spans (no
     * OpenTelemetry SDK), so the consumer's traceparent is the producer's as it came.
     */
    @Test
    void theMethodRunsInTheIncomingMessagesTraceAndReadsItFromTheMetadata() throws Exception {
        String id = UUID.randomUUID().toString();
        String traceId = UUID.randomUUID().toString().replace("-", "");
        String spanId = traceId.substring(0, 16);
        String traceparent = "00-" + traceId + "-" + spanId + "-01";
        publish(id, "Greeted", 1, "trace", Map.of(InboxHeaders.TRACEPARENT, traceparent));

        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'") == 1);
        assertThat(text(id)).isEqualTo(traceparent + " " + traceId + "-" + spanId);

        String untraced = UUID.randomUUID().toString();
        publish(untraced, "Greeted", 1, "trace");
        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + untraced + "'") == 1);
        assertThat(text(untraced)).as("no trace in, none made up").isEqualTo("null none");
    }

    /**
     * SmallRye calls the {@code @NonBlocking} method on the inbox channel's own thread: no worker pool,
     * no hand-off between one message and the next (InboxMethods refuses {@code @Blocking}).
     */
    @Test
    void theMethodRunsOnTheChannelsOwnThread() throws Exception {
        String id = UUID.randomUUID().toString();
        publish(id, "Greeted", 1, "thread");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'") == 1);
        assertThat(text(id)).isEqualTo("inbox-channel-greeting-consumer.greetings");
    }

    /** The connector found the method's bean an {@link InboxLookahead}: it looked at the message before the call. */
    @Test
    void theMethodsBeanLooksAtTheMessagesBeforeTheCalls() throws Exception {
        String id = UUID.randomUUID().toString();
        String text = "looked at " + id;
        publish(id, "Greeted", 1, text);

        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'") == 1);
        assertThat(GreetingConsumer.Greetings.LOOKS).anySatisfy(look -> assertThat(look).contains(text));
    }

    @Test
    void whatCanNeverSucceedIsDeadLetteredWithItsReasonAndTheOthersAreApplied() throws Exception {
        String poison = UUID.randomUUID().toString();
        String unknown = UUID.randomUUID().toString();
        String good = UUID.randomUUID().toString();
        publish(poison, "Greeted", 1, "poison");
        publish(unknown, "Waved", 1, "hi");
        publish(null, "Greeted", 1, "no id");
        publish(good, "Greeted", 1, "after the bad ones");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + good + "'") == 1);
        Map<String, String> reasons = awaitDeadLetters(poison, unknown, "null");
        assertThat(reasons.get(poison)).contains("makes its transaction fail while the database takes other writes");
        assertThat(reasons.get(unknown)).isEqualTo("unknown event type 'Waved'");
        assertThat(reasons.get("null")).contains("no usable message_id");
        assertThat(count("SELECT count(*) FROM greetings WHERE message_id = '" + poison + "'")).isZero();
    }

    @Test
    void aMessageTheBusinessRefusesIsDeadLetteredAtOnceWithItsReason() throws Exception {
        String refused = UUID.randomUUID().toString();
        long transientBefore = metrics.transientFailures();
        publish(refused, "Greeted", 1, "refused:not today");

        Map<String, String> reasons = awaitDeadLetters(refused);
        assertThat(reasons.get(refused)).isEqualTo("greeting refused by the business: not today");
        assertThat(metrics.transientFailures()).as("no retry, no probe: the business said never").isEqualTo(transientBefore);
        assertThat(count("SELECT count(*) FROM inbox WHERE message_id = '" + refused + "'"))
                .as("rolled back with the method: the inbox row too").isZero();
    }

    @Test
    void aMessageDuringAnOutageIsHeldNotParkedAndAppliedOnceTheDatabaseTakesWritesAgain() throws Exception {
        String id = UUID.randomUUID().toString();
        long transientBefore = metrics.transientFailures();
        long poisonBefore = metrics.poison();
        // First one applied: the consumer is bound and reading (this test may be the first, right after the start).
        String before = UUID.randomUUID().toString();
        publish(before, "Greeted", 1, "before the outage");
        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + before + "'") == 1);
        // The inbox table gone: every write of this consumer fails, the probe's too. An outage, no message's fault.
        execute("ALTER TABLE inbox RENAME TO inbox_away");
        try {
            publish(id, "Greeted", 1, "through the outage");
            await().atMost(Duration.ofSeconds(30)).until(() -> metrics.transientFailures() - transientBefore >= 3);
        } finally {
            execute("ALTER TABLE inbox_away RENAME TO inbox");
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'") == 1);
        assertThat(metrics.poison()).as("nothing parked for an outage").isEqualTo(poisonBefore);
        assertThat(takeDeadLetters()).extracting(d -> d.getProps().getMessageId()).doesNotContain(id);
    }

    @Test
    void aNewerVersionIsHeldWithEverythingBehindItThenDeadLetteredPastTheBoundAndTheRestApplied() throws Exception {
        String newer = UUID.randomUUID().toString();
        String behind = UUID.randomUUID().toString();
        long heldBefore = metrics.heldCount();
        long poisonBefore = metrics.poison();
        publish(newer, "Greeted", 2, "from a producer upgraded first");
        publish(behind, "Greeted", 1, "behind it");

        await().atMost(Duration.ofSeconds(10)).until(() -> metrics.heldCount() > heldBefore);
        assertThat(consumers.channel("greetings").orElseThrow().held()).hasEntrySatisfying(GREETINGS_QUEUE, what -> assertThat(what).contains(newer));
        assertThat(count("SELECT count(*) FROM greetings WHERE message_id = '" + behind + "'"))
                .as("nothing behind a held message overtakes it").isZero();
        assertThat(metrics.poison()).as("held, not parked").isEqualTo(poisonBefore);

        // Nothing that reads version 2 comes: past inbox.hold-unreadable-for (3 s in these tests) it is dead-lettered.
        Map<String, String> reasons = awaitDeadLetters(newer);
        assertThat(reasons.get(newer)).isEqualTo("greeting version 2 is newer than this consumer reads (1)"
                + " (held PT3S: no instance that reads it took the queue)");
        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM greetings WHERE message_id = '" + behind + "'") == 1);
        assertThat(consumers.channel("greetings").orElseThrow().held()).isEmpty();

        // Waited for once in vain: the next of that version is dead-lettered at once, not held as long again.
        String next = UUID.randomUUID().toString();
        long heldAfter = metrics.heldCount();
        publish(next, "Greeted", 2, "another from the same producer");
        assertThat(awaitDeadLetters(next).get(next)).isEqualTo("greeting version 2 is newer than this consumer reads (1)"
                + " (Greeted v2 was held PT3S before and no instance that reads it came)");
        assertThat(metrics.heldCount()).isEqualTo(heldAfter);
    }

    /**
     * Two channels of one service, each its own stream: the same message id reaching both takes effect
     * once in each (the inbox key is the channel's consumer name, so one handler's claim does not swallow
     * the other's message), a copy is a duplicate within its channel, each counts under its own consumer,
     * and a message one channel cannot apply goes to that channel's dead-letter queue, not the other's.
     */
    @Test
    void twoChannelsEachApplyTheSameMessageIdOnceWithTheirOwnQueueDeadLettersAndMetrics() throws Exception {
        InboxMetrics greetings = metrics.consumer("greeting-consumer.greetings");
        InboxMetrics farewells = metrics.consumer("greeting-consumer.farewells");
        long greetingsApplied = greetings.applied();
        long farewellsApplied = farewells.applied();
        long farewellDuplicates = farewells.duplicates();
        String id = UUID.randomUUID().toString();
        publish(id, "Greeted", 1, "hello");
        publish("farewells", "Farewelled", id, 1, "goodbye", Map.of());
        publish("farewells", "Farewelled", id, 1, "goodbye", Map.of());

        await().atMost(Duration.ofSeconds(30)).until(() -> farewells.duplicates() > farewellDuplicates
                && count("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'") == 1);
        assertThat(count("SELECT count(*) FROM farewells WHERE message_id = '" + id + "'")).isOne();
        assertThat(strings("SELECT consumer FROM inbox WHERE message_id = '" + id + "' ORDER BY consumer"))
                .containsExactly("greeting-consumer.farewells", "greeting-consumer.greetings");
        assertThat(greetings.applied() - greetingsApplied).isOne();
        assertThat(farewells.applied() - farewellsApplied).isOne();
        assertThat(registry.get("inbox.messages").tags("consumer", "greeting-consumer.farewells", "outcome", "applied")
                .functionCounter().count()).isGreaterThanOrEqualTo(1);
        assertThat(consumers.channel("farewells").orElseThrow().settings().queue())
                .as("derived from the channel's name").isEqualTo("greeting-consumer.farewells");

        String poison = UUID.randomUUID().toString();
        String after = UUID.randomUUID().toString();
        publish("farewells", "Farewelled", poison, 1, "poison", Map.of());
        publish("farewells", "Farewelled", after, 1, "after the poison", Map.of());
        Map<String, String> reasons = awaitDeadLettersIn("greeting-consumer.farewells.dead-letter", poison);
        assertThat(reasons.get(poison)).contains("makes its transaction fail while the database takes other writes");
        await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM farewells WHERE message_id = '" + after + "'") == 1);
        assertThat(takeDeadLetters()).as("the greetings' dead-letter queue").extracting(d -> d.getProps().getMessageId())
                .doesNotContain(poison);
    }

    /**
     * Group commit under the per-message method (issue 29): a burst shares transactions, the method is
     * still called once per new message in the order they came, a copy inside the burst never reaches it,
     * and one message that fails rolls its batch back and is dead-lettered alone, the others applied once.
     */
    @Test
    void aBurstIsAppliedInFewTransactionsInOrderAndAFailedMessageAmongItRollsBackAlone() throws Exception {
        String run = UUID.randomUUID().toString().substring(0, 8);
        List<String> ids = new ArrayList<>();
        List<String[]> burst = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            String id = run + "-" + i;
            burst.add(new String[] {id, i == 25 ? "poison" : "burst " + run + " " + i});
            if (i != 25) {
                ids.add(id);
            }
            if (i == 40) {
                burst.add(new String[] {run + "-7", "burst " + run + " 7"}); // a copy of an earlier one
            }
        }
        InboxMetrics greetings = metrics.consumer("greeting-consumer.greetings");
        long batchesBefore = greetings.batches();
        long appliedBefore = greetings.applied();
        long duplicatesBefore = greetings.duplicates();
        long ackedBefore = RealServices.rabbitMq().queueCounts(GreetingTestResource.VHOST, GREETINGS_QUEUE).acked();
        publishAll(burst);

        Map<String, String> reasons = awaitDeadLetters(run + "-25");
        assertThat(reasons.get(run + "-25")).contains("makes its transaction fail while the database takes other writes");
        await().atMost(Duration.ofSeconds(30)).until(() -> greetings.applied() - appliedBefore >= ids.size());
        assertThat(strings("SELECT message_id FROM greetings WHERE message_id LIKE '" + run + "-%' ORDER BY applied_order"))
                .as("each once, in the order they were published").containsExactlyElementsOf(ids);
        assertThat(count("SELECT count(*) FROM inbox WHERE message_id LIKE '" + run + "-%'"))
                .as("the inbox keeps what was applied, and no more").isEqualTo(ids.size());
        assertThat(greetings.duplicates() - duplicatesBefore).as("the copy").isEqualTo(1);
        long transactions = greetings.batches() - batchesBefore;
        System.out.printf("InboxChannelTest: %d messages (one failing, one copy) committed in %d transactions%n", burst.size(),
                transactions);
        assertThat(transactions).as("messages that arrive together share a transaction").isLessThan(ids.size() / 2);
        // And settled with the broker, every one: none left unacked on the channel, the poison one's included
        // (acked after its dead letter) and the copy's.
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            RabbitMqEndpoint.QueueCounts queue = RealServices.rabbitMq().queueCounts(GreetingTestResource.VHOST, GREETINGS_QUEUE);
            assertThat(queue.acked() - ackedBefore).as("acked, by the broker's count").isGreaterThanOrEqualTo(burst.size());
            assertThat(queue.unacknowledged()).as("unacknowledged").isZero();
            assertThat(queue.ready()).as("ready").isZero();
        });
    }

    /** Takes dead letters until these message ids ("null" for none) are among them. @return reason by message id */
    private static Map<String, String> awaitDeadLetters(String... messageIds) {
        return awaitDeadLettersIn(GREETINGS_DEAD_LETTERS, messageIds);
    }

    private static Map<String, String> awaitDeadLettersIn(String queue, String... messageIds) {
        Map<String, String> reasons = new HashMap<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            takeDeadLetters(queue).forEach(d -> reasons.put(String.valueOf(d.getProps().getMessageId()),
                    String.valueOf(d.getProps().getHeaders().get(InboxHeaders.DEAD_LETTER_REASON))));
            return reasons.keySet().containsAll(List.of(messageIds));
        });
        return reasons;
    }

    private void execute(String sql) throws Exception {
        try (java.sql.Connection connection = dataSource.getConnection()) {
            connection.createStatement().execute(sql);
        }
    }

    private long count(String sql) throws Exception {
        try (java.sql.Connection connection = dataSource.getConnection(); ResultSet rs = connection.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private List<String> strings(String sql) throws Exception {
        List<String> values = new ArrayList<>();
        try (java.sql.Connection connection = dataSource.getConnection(); ResultSet rs = connection.createStatement().executeQuery(sql)) {
            while (rs.next()) {
                values.add(rs.getString(1));
            }
        }
        return values;
    }

    private String text(String messageId) throws Exception {
        try (java.sql.Connection connection = dataSource.getConnection();
             ResultSet rs = connection.createStatement().executeQuery("SELECT text FROM greetings WHERE message_id = '" + messageId + "'")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static void publish(String messageId, String type, int schemaVersion, String body) throws Exception {
        publish(messageId, type, schemaVersion, body, Map.of());
    }

    private static void publish(String messageId, String type, int schemaVersion, String body, Map<String, Object> headers)
            throws Exception {
        publish("greetings", type, messageId, schemaVersion, body, headers);
    }

    private static void publish(String exchange, String type, String messageId, int schemaVersion, String body,
                                Map<String, Object> headers) throws Exception {
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            Map<String, Object> all = new HashMap<>(headers);
            all.put(InboxHeaders.SCHEMA_VERSION, schemaVersion);
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(messageId).type(type)
                    .headers(all).deliveryMode(2).build();
            // The routing key each channel binds, whatever the type says: an unknown type must reach the consumer.
            String routingKey = "greetings".equals(exchange) ? "Greeted" : "Farewelled";
            channel.basicPublish(exchange, routingKey, true, properties, body.getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(10_000);
        }
    }

    /** Publishes greetings (message id, body) back to back on one channel, confirmed together. */
    private static void publishAll(List<String[]> greetings) throws Exception {
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            for (String[] greeting : greetings) {
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(greeting[0]).type("Greeted")
                        .headers(Map.of(InboxHeaders.SCHEMA_VERSION, 1)).deliveryMode(2).build();
                channel.basicPublish("greetings", "Greeted", true, properties, greeting[1].getBytes(StandardCharsets.UTF_8));
            }
            channel.waitForConfirmsOrDie(10_000);
        }
    }

    private static List<GetResponse> takeDeadLetters() throws Exception {
        return takeDeadLetters(GREETINGS_DEAD_LETTERS);
    }

    private static List<GetResponse> takeDeadLetters(String queue) throws Exception {
        List<GetResponse> taken = new ArrayList<>();
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            for (GetResponse response; (response = channel.basicGet(queue, true)) != null; ) {
                taken.add(response);
            }
        }
        return taken;
    }

    private static Connection connection() throws Exception {
        return RealServices.rabbitMq().connectionFactory(GreetingTestResource.VHOST).newConnection();
    }
}
