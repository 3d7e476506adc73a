package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.inbox.Outcome;
import dev.outboxinbox.inbox.InboxMessage;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import org.junit.jupiter.api.Test;

@InventoryServiceTest
class IdempotentConsumerTest {

    @Inject
    InventoryDatabase db;

    @Inject
    InboxMetrics metrics;

    @Inject
    InboxHandler handler;

    @Test
    void theSameMessageDeliveredFiveTimesHasOneEffect() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 3);
        long seenBefore = metrics.applied() + metrics.duplicates();

        for (int i = 0; i < 5; i++) {
            Broker.publish(order);
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.applied() + metrics.duplicates() - seenBefore >= 5);
        assertThat(db.reserved(sku)).isEqualTo(3);
        assertThat(db.count("SELECT count(*) FROM reservations WHERE order_id = ?", order.orderId())).isOne();
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = ?", order.eventId().toString())).isOne();
        assertThat(db.replies(order.orderId())).as("one reply, however often the order came").containsExactly("InventoryReserved");
        await().atMost(Duration.ofSeconds(10)).until(() -> Broker.messagesWaitingForInventory() == 0);
    }

    @Test
    void theSameMessageProcessedConcurrentlyByTwoConsumersHasOneEffect() throws Exception {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 7);
        InboxMessage<OrderCreated> received = new InboxMessage<>(order.eventId().toString(), OrderCreated.TYPE, order);
        CyclicBarrier together = new CyclicBarrier(2);

        List<CompletableFuture<List<Outcome>>> consumers = List.of(
                CompletableFuture.supplyAsync(() -> handleAfter(together, received)),
                CompletableFuture.supplyAsync(() -> handleAfter(together, received)));
        List<Outcome> outcomes = consumers.stream().map(CompletableFuture::join).flatMap(List::stream).toList();

        assertThat(outcomes).hasSize(2)
                .haveExactly(1, new org.assertj.core.api.Condition<>(o -> o instanceof Outcome.Applied, "applied"))
                .haveExactly(1, new org.assertj.core.api.Condition<>(o -> o instanceof Outcome.Duplicate, "duplicate"));
        assertThat(db.reserved(sku)).isEqualTo(7);
        assertThat(db.replies(order.orderId())).containsExactly("InventoryReserved");
    }

    @Test
    void aFailureAfterTheStockUpdateRollsBackAndTheEventIsAppliedOnce() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 5);
        // Fails the first commit that includes this order's reservation, after the stock UPDATE ran,
        // with a serialization failure (a transient error: the consumer retries it).
        db.execute("""
                CREATE SEQUENCE fail_once_%1$s;
                CREATE FUNCTION fail_once_%1$s() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF nextval('fail_once_%1$s') = 1 THEN
                        RAISE EXCEPTION 'injected failure at commit' USING ERRCODE = '40001';
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE CONSTRAINT TRIGGER fail_once_%1$s AFTER INSERT ON reservations
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                    WHEN (NEW.sku = '%2$s') EXECUTE FUNCTION fail_once_%1$s();
                """.formatted(sku.replace('-', '_').toLowerCase(), sku));
        long transientBefore = metrics.transientFailures();

        Broker.publish(order);

        await().atMost(Duration.ofSeconds(30)).until(() -> "RESERVED".equals(db.status(order.orderId())));
        assertThat(metrics.transientFailures()).as("the injected failure happened").isGreaterThan(transientBefore);
        assertThat(db.count("SELECT last_value FROM fail_once_" + sku.replace('-', '_').toLowerCase())).isEqualTo(2);
        assertThat(db.reserved(sku)).isEqualTo(5);
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = ?", order.eventId().toString())).isOne();
        assertThat(db.replies(order.orderId())).as("the rolled-back attempt's reply went with it").containsExactly("InventoryReserved");
    }

    @Test
    void aMessageRedeliveredAfterItsCommitWhenTheAckWasLostHasNoSecondEffect() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 4);
        // The first delivery committed its effect, then the channel died before the ack ...
        assertThat(handler.handle(List.of(new InboxMessage<>(order.eventId().toString(), OrderCreated.TYPE, order))))
                .singleElement().isInstanceOf(Outcome.Applied.class);
        long duplicatesBefore = metrics.duplicates();

        // ... so the broker delivers it again.
        Broker.publish(order);

        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.duplicates() > duplicatesBefore);
        assertThat(db.reserved(sku)).isEqualTo(4);
        assertThat(db.replies(order.orderId())).containsExactly("InventoryReserved");
        await().atMost(Duration.ofSeconds(10)).until(() -> Broker.messagesWaitingForInventory() == 0);
    }

    /**
     * The inbox key is (consumer, message_id): a message another consumer of this database already
     * took (its row, under its own name) is still new to this one, and applied once here.
     */
    @Test
    void aMessageAnotherConsumerTookIsStillNewToThisOne() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 2);
        String messageId = order.eventId().toString();
        db.execute("INSERT INTO inbox (consumer, message_id, message_type) VALUES ('another-consumer', '" + messageId + "', 'OrderCreated')");

        assertThat(handler.handle(List.of(new InboxMessage<>(messageId, OrderCreated.TYPE, order))))
                .singleElement().isEqualTo(new Outcome.Applied("RESERVED"));
        assertThat(handler.handle(List.of(new InboxMessage<>(messageId, OrderCreated.TYPE, order))))
                .singleElement().isInstanceOf(Outcome.Duplicate.class);

        assertThat(db.reserved(sku)).isEqualTo(2);
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = ?", messageId)).isEqualTo(2);
        assertThat(db.count("SELECT count(*) FROM inbox WHERE message_id = ? AND consumer = ?", messageId, handler.consumer()))
                .isOne();
        assertThat(handler.consumer()).isEqualTo("inventory-service");
    }

    /**
     * The effect has a key of its own, the order: a second event for an order already decided (a
     * producer that emitted it twice, under another event id) passes the inbox but decides nothing,
     * takes no stock and sends no reply, and the order after it in the same batch still gets the stock.
     */
    @Test
    void aSecondEventForADecidedOrderDecidesNothingAndLeavesTheStockToTheOthers() {
        String sku = db.newProduct(2);
        OrderCreated first = Broker.order(sku, 2);
        assertThat(handler.handle(List.of(new InboxMessage<>(first.eventId().toString(), OrderCreated.TYPE, first))))
                .singleElement().isEqualTo(new Outcome.Applied("RESERVED"));
        db.execute("UPDATE products SET on_hand = on_hand + 2 WHERE sku = '" + sku + "'");

        OrderCreated again = new OrderCreated(java.util.UUID.randomUUID(), first.orderId(), first.customerId(), first.lines(), first.occurredAt());
        OrderCreated next = Broker.order(sku, 2);
        List<Outcome> outcomes = handler.handle(List.of(
                new InboxMessage<>(again.eventId().toString(), OrderCreated.TYPE, again),
                new InboxMessage<>(next.eventId().toString(), OrderCreated.TYPE, next)));

        // Decided in memory first, the repeated order would take the 2 new units and reject the next one.
        // New to the inbox, its effect already had: unchanged (counted apart from the inbox's duplicates).
        assertThat(outcomes).containsExactly(new Outcome.Unchanged(), new Outcome.Applied("RESERVED"));
        assertThat(db.reserved(sku)).isEqualTo(4);
        assertThat(db.status(next.orderId())).isEqualTo("RESERVED");
        assertThat(db.replies(first.orderId())).containsExactly("InventoryReserved");
        assertThat(db.replies(next.orderId())).containsExactly("InventoryReserved");
    }

    /** A second event for a decided order, delivered twice in one batch: unchanged once, then a copy of it. */
    @Test
    void aSecondEventForADecidedOrderTwiceInOneBatchIsUnchangedThenADuplicate() {
        String sku = db.newProduct(5);
        OrderCreated first = Broker.order(sku, 2);
        assertThat(handler.handle(List.of(new InboxMessage<>(first.eventId().toString(), OrderCreated.TYPE, first))))
                .singleElement().isEqualTo(new Outcome.Applied("RESERVED"));
        OrderCreated again = new OrderCreated(java.util.UUID.randomUUID(), first.orderId(), first.customerId(), first.lines(), first.occurredAt());
        InboxMessage<OrderCreated> received = new InboxMessage<>(again.eventId().toString(), OrderCreated.TYPE, again);

        assertThat(handler.handle(List.of(received, received))).containsExactly(new Outcome.Unchanged(), new Outcome.Duplicate());
        assertThat(handler.handle(List.of(received))).as("delivered once more").containsExactly(new Outcome.Duplicate());
        assertThat(db.reserved(sku)).isEqualTo(2);
        assertThat(db.replies(first.orderId())).containsExactly("InventoryReserved");
    }

    @Test
    void anOrderWithTooLittleStockIsRejectedAndLeavesStockUnchanged() {
        String plenty = db.newProduct(100);
        String scarce = db.newProduct(2);
        OrderCreated order = new OrderCreated(java.util.UUID.randomUUID(), java.util.UUID.randomUUID(), "c",
                List.of(new OrderCreated.Line(plenty, 1), new OrderCreated.Line(scarce, 3)), java.time.Instant.now());

        Broker.publish(order);

        await().atMost(Duration.ofSeconds(30)).until(() -> db.status(order.orderId()) != null);
        assertThat(db.status(order.orderId())).isEqualTo("REJECTED");
        assertThat(db.reserved(plenty)).as("all lines or none").isZero();
        assertThat(db.reserved(scarce)).isZero();
        assertThat(db.replies(order.orderId())).containsExactly("InventoryRejected");
    }

    /**
     * The reply is an event of the contract, in this service's outbox, written in the transaction of
     * the inbox row and the stock: its payload validates against its schema and names the order.
     */
    @Test
    void theReplyIsAValidEventOfTheContractAboutTheOrder() throws Exception {
        String sku = db.newProduct(1);
        OrderCreated reserved = Broker.order(sku, 1);
        OrderCreated rejected = Broker.order(sku, 1);
        Broker.publish(reserved);
        await().atMost(Duration.ofSeconds(30)).until(() -> "RESERVED".equals(db.status(reserved.orderId())));
        Broker.publish(rejected);
        await().atMost(Duration.ofSeconds(30)).until(() -> "REJECTED".equals(db.status(rejected.orderId())));

        for (OrderCreated order : List.of(reserved, rejected)) {
            java.util.Map<String, Object> row = db.reply(order.orderId());
            assertThat(row).containsEntry("aggregatetype", InventoryEvent.AGGREGATE_TYPE).containsEntry("schema_version", 1);
            byte[] payload = row.get("payload").toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
            InventoryEvent reply = EventSchema.decode(row.get("id").toString(), row.get("type").toString(), 1, payload, InventoryEvent.class);
            assertThat(reply.orderId()).isEqualTo(order.orderId());
            if (reply instanceof InventoryRejected rejection) {
                assertThat(order).isEqualTo(rejected);
                assertThat(rejection.reason()).isEqualTo("insufficient stock for " + sku + ": 1 wanted, 0 available");
            } else {
                assertThat(reply).isInstanceOf(InventoryReserved.class);
                assertThat(order).isEqualTo(reserved);
            }
        }
    }

    @Test
    void anOrderForAnUnknownSkuIsRejectedNotDeadLettered() {
        OrderCreated order = Broker.order("NO-SUCH-SKU", 1);
        Broker.publish(order);
        await().atMost(Duration.ofSeconds(30)).until(() -> "REJECTED".equals(db.status(order.orderId())));
    }

    private List<Outcome> handleAfter(CyclicBarrier together, InboxMessage<?> received) {
        try {
            together.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return handler.handle(List.of(received));
    }
}
