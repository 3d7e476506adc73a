package dev.outboxinbox.inventory;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.testing.RealServices;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * A failing environment is not poison: when the database refuses every write, no message is at
 * fault, so none is dead-lettered and none is handed back to the broker (each requeue spends the
 * queue's delivery limit). The service holds them, says why it is not ready, and resumes by itself.
 */
@InventoryServiceTest
class OutageTest {

    private static final int ORDERS = 10;

    @Inject
    InventoryDatabase db;

    @Inject
    InboxMetrics metrics;

    @ParameterizedTest(name = "SQLSTATE {0}: {1}")
    @CsvSource({
            "25006, a read-only node after a failover",
            "42501, a revoked grant",
            "40001, a serialization failure that does not pass"})
    void whileTheDatabaseRefusesEveryWriteNothingIsParkedOrRequeuedAndEverythingIsAppliedAfterwards(String sqlState, String cause) {
        String sku = db.newProduct(100);
        long deadLettersBefore = Broker.messagesIn(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        long requeuedBefore = metrics.requeuedCount();
        db.execute("""
                CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    RAISE EXCEPTION 'injected: %1$s' USING ERRCODE = '%2$s';
                END $$;
                CREATE TRIGGER refuse_writes BEFORE INSERT ON inbox FOR EACH STATEMENT EXECUTE FUNCTION refuse_writes();
                """.formatted(cause, sqlState));
        List<OrderCreated> orders = new ArrayList<>();
        try {
            for (int i = 0; i < ORDERS; i++) {
                OrderCreated order = Broker.order(sku, 1);
                orders.add(order);
                Broker.publish(order);
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(503)
                    .body("checks.find { it.name == 'RabbitMQ consumer' }.data.problem", containsString("outage")));
            // Longer than any retry budget the consumer used to have: still nothing parked, nothing handed back.
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() ->
                    Broker.messagesIn(Topology.INVENTORY_DEAD_LETTER_QUEUE) == deadLettersBefore
                            && metrics.requeuedCount() == requeuedBefore);
            assertThat(orders).allSatisfy(order -> assertThat(db.status(order.orderId())).isNull());
        } finally {
            db.execute("DROP TRIGGER refuse_writes ON inbox; DROP FUNCTION refuse_writes()");
        }

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(orders).allSatisfy(order -> assertThat(db.status(order.orderId())).isEqualTo("RESERVED")));
        assertThat(db.reserved(sku)).isEqualTo(ORDERS);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200));
        assertThat(Broker.messagesIn(Topology.INVENTORY_DEAD_LETTER_QUEUE)).isEqualTo(deadLettersBefore);
        assertThat(metrics.requeuedCount()).isEqualTo(requeuedBefore);
    }

    /**
     * A message at fault is still poison while the database takes other writes: here the one order
     * whose reservation breaks a rule the database enforces (a trigger standing in for a constraint).
     */
    @Test
    void aMessageThatFailsWhileOthersSucceedIsStillPoison() {
        String sku = db.newProduct(100);
        OrderCreated bad = Broker.order(sku, 7);
        db.execute("""
                CREATE FUNCTION refuse_seven() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    RAISE EXCEPTION 'injected: quantity 7 breaks a rule' USING ERRCODE = '23514';
                END $$;
                CREATE TRIGGER refuse_seven BEFORE INSERT ON reservations FOR EACH ROW
                    WHEN (NEW.quantity = 7) EXECUTE FUNCTION refuse_seven();
                """);
        try {
            List<OrderCreated> good = List.of(Broker.order(sku, 1), Broker.order(sku, 2));
            Broker.publish(good.get(0));
            Broker.publish(bad);
            Broker.publish(good.get(1));

            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(good).allSatisfy(order -> assertThat(db.status(order.orderId())).isEqualTo("RESERVED")));
            await().atMost(Duration.ofSeconds(30)).until(() -> deadLetterOf(bad.eventId().toString()) != null);
            assertThat(db.status(bad.orderId())).isNull();
        } finally {
            db.execute("DROP TRIGGER refuse_seven ON reservations; DROP FUNCTION refuse_seven()");
        }
    }

    /**
     * The dead-letter channel closes on a channel error (here: its exchange deleted under it). The
     * next attempt gets a new channel, so once the exchange is back the poison is parked with its
     * reason, rather than looping until the broker dead-letters it without one.
     */
    @Test
    void theDeadLetterChannelIsReplacedAfterItCloses() throws Exception {
        String id = UUID.randomUUID().toString();
        try (Connection connection = RealServices.rabbitMq().connectionFactory(InventoryTestResource.VHOST).newConnection();
             Channel channel = connection.createChannel()) {
            channel.exchangeDelete(Topology.INVENTORY_DEAD_LETTER_EXCHANGE);
            try {
                long poisonBefore = metrics.poison();
                Broker.publish(Broker.propertiesOf(Broker.order("SKU-APPLE", 1)).messageId(id).build(), "{\"eventId\": ".getBytes());
                await().atMost(Duration.ofSeconds(10)).until(() -> metrics.poison() > poisonBefore);
                // Without its exchange nothing can be parked; the first attempt closes the dead-letter channel.
                await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> deadLetterOf(id) == null);
            } finally {
                channel.exchangeDeclare(Topology.INVENTORY_DEAD_LETTER_EXCHANGE, BuiltinExchangeType.FANOUT, true);
                channel.queueBind(Topology.INVENTORY_DEAD_LETTER_QUEUE, Topology.INVENTORY_DEAD_LETTER_EXCHANGE, "");
            }
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> deadLetterOf(id) != null);
        GetResponse parked = deadLetterOf(id);
        assertThat(String.valueOf(parked.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)))
                .startsWith("malformed JSON");
        assertThat(parked.getProps().getHeaders()).as("parked by the service, not by the broker's delivery limit")
                .doesNotContainKey("x-death");
    }

    private final List<GetResponse> deadLetters = new ArrayList<>();

    private GetResponse deadLetterOf(String messageId) {
        deadLetters.addAll(Broker.takeDeadLetters());
        return deadLetters.stream().filter(m -> messageId.equals(m.getProps().getMessageId())).findFirst().orElse(null);
    }
}
