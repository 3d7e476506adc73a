package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A verifier that cannot fail proves nothing. Each test writes a state straight into real
 * databases (migrated by the services' own migrations) and a real broker, as a broken system would
 * leave it, and checks the verifier names the violation; and that a sound state passes.
 */
class VerifierTest {

    private static final String ORDERS_DB = "verifier_orders";
    private static final String INVENTORY_DB = "verifier_inventory";
    private static final String SLOT = "test_verifier";
    private static final String REPLY_SLOT = "test_verifier_replies";
    private static final String VHOST = "verifier-test";
    private static final Verifier.Settling SETTLED = new Verifier.Settling(0, 0);

    private final PostgresEndpoint pg = RealServices.postgres();
    private final RabbitMqEndpoint broker = RealServices.rabbitMq();
    private Verifier verifier;
    private final List<OrderLoad.Request> requests = new ArrayList<>();

    @BeforeEach
    void freshSystemState() throws Exception {
        pg.recreateDatabase(ORDERS_DB);
        pg.recreateDatabase(INVENTORY_DB);
        Map<String, String> outbox = Map.of("outbox_publication", "outbox_publication", "relay_role", "nobody");
        migrate(ORDERS_DB, "order-service/src/main/resources/db/migration", "flyway_schema_history", outbox);
        migrate(ORDERS_DB, "shared-events/inbox/src/main/resources/db/inbox", "inbox_schema_history", Map.of());
        migrate(INVENTORY_DB, "inventory-service/src/main/resources/db/migration", "flyway_schema_history", Map.of());
        migrate(INVENTORY_DB, "shared-events/outbox/src/main/resources/db/outbox", "outbox_schema_history", outbox);
        pg.execute(ORDERS_DB, "SELECT pg_create_logical_replication_slot('" + SLOT + "', 'pgoutput')");
        pg.execute(INVENTORY_DB, "SELECT pg_create_logical_replication_slot('" + REPLY_SLOT + "', 'pgoutput')");
        broker.recreateVirtualHost(VHOST);
        try (Connection connection = broker.connectionFactory(VHOST).newConnection(); Channel channel = connection.createChannel()) {
            for (String partition : Topology.inventoryPartitions()) {
                channel.queueDeclare(partition, true, false, false, Topology.inventoryPartitionArguments());
            }
            channel.queueDeclare(Topology.INVENTORY_DEAD_LETTER_QUEUE, true, false, false, Topology.deadLetterQueueArguments());
            channel.queueDeclare(Topology.ORDER_REPLIES_QUEUE, true, false, false, Topology.orderRepliesQueueArguments());
            channel.queueDeclare(Topology.ORDER_DEAD_LETTER_QUEUE, true, false, false, Topology.deadLetterQueueArguments());
            channel.queueDeclare(Topology.RELAY_PARKING_QUEUE, true, false, false, Topology.relayParkingQueueArguments());
        }
        verifier = new Verifier(new SystemUnderTest(null, null,
                new Database(pg.jdbcUrl(ORDERS_DB), pg.user(), pg.password()),
                new Database(pg.jdbcUrl(INVENTORY_DB), pg.user(), pg.password()),
                SLOT, REPLY_SLOT, new Broker(broker.host(), broker.port(), VHOST, broker.user(), broker.password(), broker.management())));
    }

    @AfterAll
    static void dropSlot() {
        RealServices.postgres().execute("postgres", "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name IN ('" + SLOT + "', '" + REPLY_SLOT + "')");
    }

    @Test
    void aSoundRunPasses() throws Exception {
        UUID reserved = order(Map.of("SKU-APPLE", 2, "SKU-PEAR", 1));
        reserve(reserved, Map.of("SKU-APPLE", 2, "SKU-PEAR", 1));
        UUID rejected = order(Map.of("SKU-DURIAN", 1));
        reject(rejected);

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).as(report.toText()).isEmpty();
        assertThat(report.passed()).isTrue();
        assertThat(report.committedOrders()).isEqualTo(2);
        assertThat(report.eventsPublished()).isEqualTo(2);
        assertThat(report.eventsInInbox()).isEqualTo(2);
        assertThat(report.repliesInInbox()).isEqualTo(2);
        assertThat(report.ordersDecided()).isEqualTo(Map.of("CONFIRMED", 1L, "REJECTED", 1L));
    }

    @Test
    void anEffectAppliedTwiceIsADuplicateEffect() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 3));
        reserve(order, Map.of("SKU-APPLE", 3));
        // What a consumer without deduplication does with a redelivery.
        pg.execute(INVENTORY_DB, "UPDATE reservations SET quantity = quantity + 3 WHERE order_id = '" + order + "'",
                "UPDATE products SET reserved = reserved + 3 WHERE sku = 'SKU-APPLE'");

        VerificationReport report = verify(Set.of());

        assertThat(report.passed()).isFalse();
        assertThat(report.duplicateEffects()).isEqualTo(2); // the order, and the SKU beyond its orders
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: order reserved more than it ordered"));
    }

    @Test
    void stockReservedForARejectedOrderIsADuplicateEffect() throws Exception {
        UUID order = order(Map.of("SKU-FIG", 5));
        reserve(order, Map.of("SKU-FIG", 5));
        pg.execute(INVENTORY_DB, "UPDATE order_outcomes SET status = 'REJECTED' WHERE order_id = '" + order + "'");

        VerificationReport report = verify(Set.of());

        assertThat(report.duplicateEffects()).isPositive();
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: rejected order holds stock"));
    }

    @Test
    void aCommittedOrderWithoutOutcomeIsLostAndNeverConverges() throws Exception {
        reserve(order(Map.of("SKU-APPLE", 1)), Map.of("SKU-APPLE", 1));
        UUID undelivered = order(Map.of("SKU-PEAR", 1));

        Verifier.Settling settling = verifier.awaitConvergence(verifier.walPosition(), 0, Duration.ofSeconds(1), line -> { });
        VerificationReport report = verifier.verify(requests, Set.of(), null, settling, Duration.ofSeconds(1));

        assertThat(settling.settledMillis()).isEqualTo(-1);
        assertThat(report.lost()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.contains("committed order has no outcome") && v.contains(undelivered.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("did not converge"));
    }

    @Test
    void anAcknowledgedOrderThatDoesNotExistIsLost() throws Exception {
        requests.add(new OrderLoad.Request(99, "key-99", List.of(new OrderLoad.Line("SKU-APPLE", 1)), OrderLoad.Result.OK,
                UUID.randomUUID(), 1, null));

        VerificationReport report = verify(Set.of());

        assertThat(report.lost()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: acknowledged order does not exist"));
    }

    @Test
    void anEffectWithoutACommittedOrderIsAPhantom() throws Exception {
        UUID ghost = UUID.randomUUID();
        pg.execute(INVENTORY_DB, "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + UUID.randomUUID() + "', 'OrderCreated')",
                "INSERT INTO order_outcomes (order_id, status, message_id, decided_at) VALUES ('" + ghost + "', 'REJECTED', 'm', now())");

        VerificationReport report = verify(Set.of());

        assertThat(report.phantoms()).isEqualTo(2);
        assertThat(report.violations()).anyMatch(v -> v.contains("outcome for an order that was never committed") && v.contains(ghost.toString()));
        assertThat(report.violations()).anyMatch(v -> v.contains("inbox holds a message id that is not an outbox event"));
    }

    @Test
    void aRequestThatFailedDefinitelyButCommittedIsAPhantom() throws Exception {
        UUID order = order(Map.of("SKU-PLUM", 1));
        reserve(order, Map.of("SKU-PLUM", 1));
        OrderLoad.Request ok = requests.remove(0);
        requests.add(new OrderLoad.Request(ok.index(), ok.idempotencyKey(), ok.lines(), OrderLoad.Result.FAILED, null, 1, "400"));

        VerificationReport report = verify(Set.of());

        assertThat(report.phantoms()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: request failed definitely but committed"));
    }

    @Test
    void theDeadLetterQueueMustHoldExactlyTheInjectedPoison() throws Exception {
        deadLetter("poison-1");

        assertThat(verify(Set.of("poison-1")).violations()).isEmpty();
        assertThat(verify(Set.of()).violations()).containsExactly("dead-lettered but not injected as poison: poison-1");
        assertThat(verify(Set.of("poison-1", "poison-2")).violations())
                .containsExactly("injected poison is not in the dead-letter queue: poison-2");
    }

    @Test
    void aDeadLetterWithoutTheServicesReasonOrParkedByTheDeliveryLimitIsNamed() throws Exception {
        deadLetter("no-reason", Map.of());
        deadLetter("limit", Map.of("x-first-death-reason", "delivery_limit",
                "x-death", List.of(Map.of("reason", "delivery_limit", "queue", Topology.inventoryPartitions().get(0), "count", 10L))));

        assertThat(verify(Set.of("no-reason", "limit")).violations()).containsExactlyInAnyOrder(
                "dead letter without the service's reason: no-reason",
                "dead-lettered by the broker's delivery limit, not by the service: limit");
    }

    @Test
    void anOrderNoRequestsKeyLeadsToIsARequestCommittedTwice() throws Exception {
        UUID first = order(Map.of("SKU-APPLE", 1));
        reserve(first, Map.of("SKU-APPLE", 1));
        UUID second = order(Map.of("SKU-APPLE", 1));
        reserve(second, Map.of("SKU-APPLE", 1));
        // The same request's second commit: a key points at one order only.
        pg.execute(ORDERS_DB, "DELETE FROM idempotency_keys WHERE order_id = '" + second + "'");
        requests.remove(1);

        VerificationReport report = verify(Set.of());

        assertThat(report.duplicateEffects()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: committed order no Idempotency-Key leads to")
                && v.contains(second.toString()));
    }

    @Test
    void anOutcomeDecidedByAnotherOrdersEventIsAPhantom() throws Exception {
        UUID mine = order(Map.of("SKU-APPLE", 1));
        UUID other = order(Map.of("SKU-PEAR", 1));
        reject(other);
        pg.execute(INVENTORY_DB, "INSERT INTO order_outcomes (order_id, status, reason, message_id, decided_at) VALUES ('"
                + mine + "', 'REJECTED', 'x', '" + other + "', now())");

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: outcome decided by another order's event")
                && v.contains(mine.toString()));
    }

    @Test
    void anOrderInventoryDecidedThatOrderServiceNeverHeardOfIsLost() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        pg.execute(ORDERS_DB, "UPDATE orders SET status = 'PENDING', decided_by = NULL, decided_at = NULL WHERE id = '" + order + "'",
                "DELETE FROM inbox");

        VerificationReport report = verify(Set.of());

        assertThat(report.lost()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: inventory decided, order-service still PENDING")
                && v.contains(order.toString()));
        assertThat(verifier.convergence(verifier.walPosition()).pending()).isOne();
    }

    @Test
    void aSecondReplyForAnOrderIsADuplicateEffect() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        // What inventory without deduplication does with a redelivered OrderCreated: decide, and reply, again.
        reply(order, "InventoryReserved");

        VerificationReport report = verify(Set.of());

        assertThat(report.duplicateEffects()).isEqualTo(1);
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: inventory replied more than once"));
    }

    @Test
    void orderServiceDisagreeingWithInventoryOrDecidedByAnotherOrdersReplyIsNamed() throws Exception {
        UUID confirmed = order(Map.of("SKU-APPLE", 1));
        reserve(confirmed, Map.of("SKU-APPLE", 1));
        UUID rejected = order(Map.of("SKU-DURIAN", 1));
        reject(rejected);
        pg.execute(ORDERS_DB, "UPDATE orders SET status = 'REJECTED' WHERE id = '" + confirmed + "'",
                "UPDATE orders SET decided_by = (SELECT decided_by FROM orders WHERE id = '" + confirmed + "') WHERE id = '" + rejected + "'");

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("order-service says REJECTED, inventory RESERVED: " + confirmed));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: order decided by a message that is not inventory's reply to it")
                && v.contains(rejected.toString()));
    }

    @Test
    void aDeadLetteredReplyIsNamed() throws Exception {
        deadLetter(Topology.ORDER_DEAD_LETTER_QUEUE, "reply-1", Map.of(MessageHeaders.DEAD_LETTER_REASON, "unknown event type 'X'"));

        assertThat(verify(Set.of()).violations()).containsExactly("a reply was dead-lettered: reply-1 (unknown event type 'X')");
    }

    @Test
    void aMessageInAConsumersHandsIsNotDrained() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        try (Connection connection = broker.connectionFactory(VHOST).newConnection(); Channel channel = connection.createChannel()) {
            String partition = Topology.inventoryPartitions().get(3);
            channel.basicPublish("", partition, new AMQP.BasicProperties.Builder().messageId("held").build(),
                    "{}".getBytes(StandardCharsets.UTF_8));
            // Taken and never acked: nothing is ready, yet the queue is not drained. (A consumer, not basic.get,
            // which a quorum queue with single active consumer refuses.)
            java.util.concurrent.atomic.AtomicInteger taken = new java.util.concurrent.atomic.AtomicInteger();
            channel.basicQos(1);
            channel.basicConsume(partition, false, new com.rabbitmq.client.DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, com.rabbitmq.client.Envelope envelope, AMQP.BasicProperties properties,
                                           byte[] body) {
                    taken.incrementAndGet();
                }
            });
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> taken.get() == 1);

            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> verifier.convergence(verifier.walPosition()).unacked() == 1);
            Verifier.Convergence state = verifier.convergence(verifier.walPosition());
            assertThat(state.queued()).isZero();
            assertThat(state.settled(0)).isFalse();
        }
    }

    @Test
    void aSoundRunWithCancellationsPasses() throws Exception {
        Map<String, Integer> before = verifier.onHand();
        UUID live = order(Map.of("SKU-APPLE", 2));
        reserve(live, Map.of("SKU-APPLE", 2));
        UUID cancelled = order(Map.of("SKU-APPLE", 3, "SKU-PEAR", 1));
        reserve(cancelled, Map.of("SKU-APPLE", 3, "SKU-PEAR", 1));
        cancel(cancelled, Map.of("SKU-APPLE", 3, "SKU-PEAR", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        // Cancelled while PENDING, then rejected by inventory: nothing to release, and still CANCELLED.
        UUID rejectedThenCancelled = order(Map.of("SKU-DURIAN", 1));
        String cancelEvent = requestCancel(rejectedThenCancelled);
        pg.execute(INVENTORY_DB,
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + rejectedThenCancelled + "', 'OrderCreated')",
                "INSERT INTO order_outcomes (order_id, status, reason, message_id, decided_at) VALUES ('" + rejectedThenCancelled
                        + "', 'REJECTED', 'insufficient stock', '" + rejectedThenCancelled + "', now())");
        String rejection = reply(rejectedThenCancelled, "InventoryRejected");
        pg.execute(ORDERS_DB, // the decision arrives while CANCELLING: recorded, the status stays
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('order-service', '" + rejection + "', 'InventoryRejected')",
                "UPDATE orders SET decided_by = '" + rejection + "', decided_at = now() WHERE id = '" + rejectedThenCancelled + "'");
        finishCancel(rejectedThenCancelled, applyCancel(rejectedThenCancelled, cancelEvent, Map.of()));
        cancelSent(rejectedThenCancelled, OrderLoad.CancelResult.UNKNOWN);
        // Rejected first: the cancel answered 409, nothing written.
        UUID rejected = order(Map.of("SKU-DURIAN", 2));
        reject(rejected);
        cancelSent(rejected, OrderLoad.CancelResult.REJECTED);
        // A cancel whose answer never came and that never reached order-service: nothing anywhere, right too.
        UUID unknown = order(Map.of("SKU-PLUM", 1));
        reserve(unknown, Map.of("SKU-PLUM", 1));
        cancelSent(unknown, OrderLoad.CancelResult.UNKNOWN);
        String refused = refusedEvent();
        parked(refused);

        VerificationReport report = verify(new Verifier.Expected(Set.of(), Set.of(refused), before));

        assertThat(report.violations()).as(report.toText()).isEmpty();
        assertThat(report.cancels()).isEqualTo(Map.of("ACKNOWLEDGED", 1L, "REJECTED", 1L, "UNKNOWN", 2L));
        assertThat(report.cancelsRequested()).isEqualTo(2);
        assertThat(report.cancellationsApplied()).isEqualTo(2);
        assertThat(report.reordered()).isZero();
        assertThat(report.parked()).isOne();
        assertThat(report.expectedParked()).isOne();
        assertThat(report.ordersDecided()).isEqualTo(Map.of("CONFIRMED", 2L, "CANCELLED", 2L, "REJECTED", 1L));
        assertThat(report.eventsByType()).isEqualTo(Map.of("OrderCreated", 6L, "OrderCancelled", 2L)); // the refused row's type too
        assertThat(report.stock().get("SKU-APPLE")).isEqualTo(new VerificationReport.Stock(1000, 1000, 2, 2, 3));
        assertThat(report.toText()).contains("reordered            0", "parked by the relay  1 (refused on purpose: 1)",
                "cancels requested    2 (taken by order-service), applied in inventory: 2");
        assertThat(report.toJson()).contains("\"reordered\" : 0", "\"cancellationsApplied\" : 2", "\"expectedParked\" : 1");
        Verifier.Convergence state = verifier.convergence("0/0"); // the slots: past the beginning of the WAL, as here nothing streams
        assertThat(state.cancelling()).isZero();
        assertThat(state.cancellationsUnapplied()).isZero();
        assertThat(state.parked()).isOne();
        assertThat(state.settled(0, 1)).isTrue();
        assertThat(state.settled(0, 2)).as("a refused event not parked yet").isFalse();
    }

    @Test
    void aCancellationBeforeItsOrderIsReordered() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        String cancelEvent = requestCancel(order);
        // What inventory does when the OrderCancelled comes first: a tombstone, nothing released; the late
        // OrderCreated then reserves nothing.
        pg.execute(INVENTORY_DB, "INSERT INTO order_outcomes (order_id, status, message_id, decided_at) VALUES ('"
                + order + "', 'CANCELLED_FIRST', '" + cancelEvent + "', now())",
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + order + "', 'OrderCreated')");
        finishCancel(order, applyCancel(order, cancelEvent, Map.of()));
        cancelSent(order, OrderLoad.CancelResult.ACKNOWLEDGED);

        VerificationReport report = verify(Set.of());

        assertThat(report.reordered()).isOne();
        assertThat(report.violations()).as(report.toText()).containsExactly(
                "REORDERED: the cancellation reached inventory before the order's OrderCreated (outcome CANCELLED_FIRST), e.g. [" + order + "]");
    }

    @Test
    void orderServiceTakingTheDecisionAfterTheReleaseIsReordered() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancel(order, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        UUID inOrder = order(Map.of("SKU-APPLE", 1));
        reserve(inOrder, Map.of("SKU-APPLE", 1));
        cancel(inOrder, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        // order-service took the decision reply after the release (what it records when the customer was quicker).
        pg.execute(ORDERS_DB, "UPDATE orders SET decided_at = cancelled_at + interval '1 second' WHERE id = '" + order + "'");

        VerificationReport report = verify(Set.of());

        assertThat(report.reordered()).isOne();
        assertThat(report.violations()).as(report.toText()).containsExactly("REORDERED: order-service took inventory's decision after the"
                + " order's release (the replies out of order), e.g. [" + order + "]");
    }

    @Test
    void aDecisionTakenButNotRecordedOnACancelledOrderIsAViolation() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancel(order, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        // The decision reply's inbox row is there, the order does not show it.
        pg.execute(ORDERS_DB, "UPDATE orders SET decided_by = NULL, decided_at = NULL WHERE id = '" + order + "'");

        VerificationReport report = verify(Set.of());

        assertThat(report.reordered()).isZero();
        assertThat(report.violations()).anyMatch(v -> v.contains("took inventory's decision for a cancelled order without recording it"));
    }

    @Test
    void aCancelledOrderMustReleaseExactlyWhatItReserved() throws Exception {
        UUID short1 = order(Map.of("SKU-APPLE", 3, "SKU-PEAR", 2));
        reserve(short1, Map.of("SKU-APPLE", 3, "SKU-PEAR", 2));
        cancel(short1, Map.of("SKU-APPLE", 3), OrderLoad.CancelResult.ACKNOWLEDGED);
        UUID live = order(Map.of("SKU-PLUM", 3));
        reserve(live, Map.of("SKU-PLUM", 3));
        UUID twice = order(Map.of("SKU-PLUM", 2));
        reserve(twice, Map.of("SKU-PLUM", 2));
        cancel(twice, Map.of("SKU-PLUM", 4), OrderLoad.CancelResult.ACKNOWLEDGED);

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: cancelled order did not release what it reserved")
                && v.contains(short1.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: cancelled order released more than it reserved")
                && v.contains(twice.toString()));
        // The pear still reserved, the plum given back twice: stock is not what the live orders add up to.
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: SKU reserved beyond its live orders") && v.contains("SKU-PEAR"));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("DUPLICATE EFFECT: SKU reserved below its live orders") && v.contains("SKU-PLUM"));
    }

    @Test
    void aReleaseByAnOrderThatReservedNothingOrWasNotCancelledIsAPhantom() throws Exception {
        UUID live = order(Map.of("SKU-APPLE", 5));
        reserve(live, Map.of("SKU-APPLE", 5));
        UUID rejected = order(Map.of("SKU-DURIAN", 1));
        reject(rejected);
        cancel(rejected, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        UUID notCancelled = order(Map.of("SKU-PEAR", 1));
        reserve(notCancelled, Map.of("SKU-PEAR", 1));
        pg.execute(INVENTORY_DB, "INSERT INTO releases (order_id, sku, quantity) VALUES ('" + notCancelled + "', 'SKU-PEAR', 1)");

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: stock released for an order that reserved nothing")
                && v.contains(rejected.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: stock released for an order that was not cancelled")
                && v.contains(notCancelled.toString()));
    }

    @Test
    void aCancellationWithoutACancelRequestIsAPhantom() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        String event = UUID.randomUUID().toString(); // not in order-service's outbox, and nobody asked
        applyCancel(order, event, Map.of("SKU-APPLE", 1));

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: cancellation in inventory without a cancel request in order-service")
                && v.contains(order.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: cancellation applied by a message that is not the order's OrderCancelled"));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: inbox holds a message id that is not an outbox event"));
    }

    @Test
    void stockOnHandThatChangedIsNotConserved() throws Exception {
        Map<String, Integer> before = verifier.onHand();
        UUID order = order(Map.of("SKU-FIG", 2));
        reserve(order, Map.of("SKU-FIG", 2));
        pg.execute(INVENTORY_DB, "UPDATE products SET on_hand = on_hand - 2 WHERE sku = 'SKU-FIG'");

        assertThat(verify(new Verifier.Expected(Set.of(), Set.of(), before)).violations())
                .containsExactly("stock on hand of SKU-FIG changed: 50 before the run, 48 after");
        assertThat(verify(Set.of()).violations()).as("not compared without the figures from before").isEmpty();
    }

    @Test
    void anAcknowledgedCancelThatNeverFinishesIsLostAndNeverConverges() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        requestCancel(order);
        cancelSent(order, OrderLoad.CancelResult.ACKNOWLEDGED);

        Verifier.Settling settling = verifier.awaitConvergence(verifier.walPosition(), new Verifier.Expected(Set.of(), Set.of(), null),
                Duration.ofSeconds(1), line -> { });
        VerificationReport report = verifier.verify(requests, Set.of(), null, settling, Duration.ofSeconds(1));

        assertThat(settling.settledMillis()).isEqualTo(-1);
        Verifier.Convergence state = verifier.convergence(verifier.walPosition());
        assertThat(state.cancelling()).isOne();
        assertThat(state.cancellationsUnapplied()).isOne();
        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: cancel requested in order-service, no cancellation in inventory")
                && v.contains(order.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: order still CANCELLING"));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("did not converge"));
    }

    @Test
    void anAcknowledgedCancelNotInOrderServiceIsLost() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancelSent(order, OrderLoad.CancelResult.ACKNOWLEDGED);

        VerificationReport report = verify(Set.of());

        assertThat(report.lost()).isOne();
        assertThat(report.violations()).containsExactly("LOST: acknowledged cancel not recorded in order-service, e.g. [" + order + " (CONFIRMED)]");
    }

    @Test
    void anOrderCancelledInOrderServiceOnlyOrByTheWrongReplyIsNamed() throws Exception {
        UUID notInInventory = order(Map.of("SKU-APPLE", 1));
        reserve(notInInventory, Map.of("SKU-APPLE", 1));
        requestCancel(notInInventory);
        finishCancel(notInInventory, reply(notInInventory, "InventoryReserved"));
        cancelSent(notInInventory, OrderLoad.CancelResult.ACKNOWLEDGED);

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: order-service says CANCELLED, inventory has no cancellation")
                && v.contains(notInInventory.toString()));
        assertThat(report.violations()).anyMatch(v -> v.startsWith("PHANTOM: order cancelled by a message that is not inventory's release of it"));
    }

    @Test
    void aSecondReleaseReplyIsADuplicateEffect() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancel(order, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        reply(order, "InventoryReleased");

        VerificationReport report = verify(Set.of());

        assertThat(report.duplicateEffects()).isOne();
        assertThat(report.violations()).containsExactly(
                "DUPLICATE EFFECT: inventory replied InventoryReleased more than once for an order, e.g. [" + order + ": 2 replies]");
    }

    @Test
    void aCancelTakenByOrderServiceButNeverAppliedInInventoryIsLostWhateverTheClientHeard() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        requestCancel(order);
        pg.execute(ORDERS_DB, "UPDATE orders SET status = 'CANCELLED' WHERE id = '" + order + "'");
        cancelSent(order, OrderLoad.CancelResult.UNKNOWN);

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).anyMatch(v -> v.startsWith("LOST: cancel requested in order-service, no cancellation in inventory"));
        assertThat(verifier.convergence(verifier.walPosition()).cancellationsUnapplied()).isOne();
    }

    @Test
    void aCancelThatFailedDefinitelyButWasTakenIsAPhantom() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancel(order, Map.of("SKU-APPLE", 1), OrderLoad.CancelResult.ACKNOWLEDGED);
        OrderLoad.Request sent = requests.get(0);
        requests.set(0, sent.withCancel(new OrderLoad.Cancel(OrderLoad.CancelResult.FAILED, 1, "404 no such order", 0)));

        VerificationReport report = verify(Set.of());

        assertThat(report.violations()).containsExactlyInAnyOrder(
                "PHANTOM: cancel failed definitely but was taken, e.g. [" + order + " (404 no such order)]",
                "cancel of an acknowledged order refused: " + order + " 404 no such order");
    }

    @Test
    void a409ForAnOrderInventoryDidNotRejectIsNamed() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        cancelSent(order, OrderLoad.CancelResult.REJECTED);

        assertThat(verify(Set.of()).violations())
                .containsExactly("cancel answered 409, yet order-service says CONFIRMED, inventory RESERVED: " + order);
    }

    @Test
    void aCancelNoClientSentIsAPhantom() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        finishCancel(order, applyCancel(order, requestCancel(order), Map.of("SKU-APPLE", 1)));

        assertThat(verify(Set.of()).violations())
                .containsExactly("PHANTOM: order cancelled in order-service that the client never asked to cancel, e.g. [" + order + "]");
    }

    @Test
    void theParkingQueueMustHoldExactlyTheRefusedEventsWithoutEffect() throws Exception {
        UUID order = order(Map.of("SKU-APPLE", 1));
        reserve(order, Map.of("SKU-APPLE", 1));
        String refused = refusedEvent();
        String notParked = refusedEvent();
        String tookEffect = refusedEvent();
        parked(refused);
        parked(refused); // parked again by a relay's recovery: still one event
        parked(tookEffect);
        String neverSent = refusedEvent(); // not refused by the run: parked, and nobody sent it on
        parked(neverSent);
        parked(order.toString()); // an order's event delivered, and a copy of it still parked
        pg.execute(INVENTORY_DB, "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + tookEffect
                + "', 'OrderCreated')");

        VerificationReport report = verify(new Verifier.Expected(Set.of(), Set.of(refused, notParked, tookEffect), null));

        assertThat(report.parked()).isEqualTo(4);
        assertThat(report.expectedParked()).isEqualTo(3);
        String reason = " (refused: ACCESS_REFUSED - access to exchange 'chaos.refused' in vhost '/' refused)";
        assertThat(report.violations()).as(report.toText()).containsExactlyInAnyOrder(
                "LOST: event parked by the relay that the run did not refuse (never delivered), e.g. [" + neverSent
                        + " OrderCreated of null" + reason + "]", // its aggregate id is no order id
                "an event delivered to its consumer is still parked by the relay (a stale copy): " + order + " OrderCreated of " + order + reason,
                "refused event is not in the relay's parking queue: " + notParked,
                "PHANTOM: a refused event took effect, e.g. [" + tookEffect + "]");
        assertThat(verifier.convergence(verifier.walPosition()).parked()).isEqualTo(5);
    }

    /** order-service takes a cancel: CANCELLING and its OrderCancelled event, in one transaction; returns the event's id. */
    private String requestCancel(UUID order) {
        String event = UUID.randomUUID().toString();
        pg.execute(ORDERS_DB,
                "UPDATE orders SET status = 'CANCELLING', cancel_requested_at = now() WHERE id = '" + order + "'",
                "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                        + " VALUES ('" + event + "', 'orders', '" + order + "', 'OrderCancelled', 1, '{}', now())");
        return event;
    }

    /** inventory applies the OrderCancelled: its inbox row, the cancellation, the releases, the stock given back; returns the reply's id. */
    private String applyCancel(UUID order, String event, Map<String, Integer> released) {
        List<String> statements = new ArrayList<>(List.of(
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + event + "', 'OrderCancelled')",
                "INSERT INTO cancellations (order_id, message_id, cancelled_at) VALUES ('" + order + "', '" + event + "', now())"));
        released.forEach((sku, quantity) -> {
            statements.add("INSERT INTO releases (order_id, sku, quantity) VALUES ('" + order + "', '" + sku + "', " + quantity + ")");
            statements.add("UPDATE products SET reserved = reserved - " + quantity + " WHERE sku = '" + sku + "'");
        });
        pg.execute(INVENTORY_DB, statements.toArray(String[]::new));
        return reply(order, "InventoryReleased");
    }

    /** order-service takes the release: CANCELLED by that reply. */
    private void finishCancel(UUID order, String reply) {
        pg.execute(ORDERS_DB,
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('order-service', '" + reply + "', 'InventoryReleased')",
                "UPDATE orders SET status = 'CANCELLED', cancelled_at = now(), cancelled_by = '" + reply + "' WHERE id = '" + order + "'");
    }

    /** A cancel all the way: taken, applied (releasing {@code released}), answered; the client told {@code result}. */
    private void cancel(UUID order, Map<String, Integer> released, OrderLoad.CancelResult result) {
        finishCancel(order, applyCancel(order, requestCancel(order), released));
        cancelSent(order, result);
    }

    /** What the load recorded about the cancel it sent for {@code order}. */
    private void cancelSent(UUID order, OrderLoad.CancelResult result) {
        for (int i = 0; i < requests.size(); i++) {
            if (order.equals(requests.get(i).orderId())) {
                requests.set(i, requests.get(i).withCancel(new OrderLoad.Cancel(result, 1,
                        result == OrderLoad.CancelResult.REJECTED ? "409 inventory rejected this order" : null, 0)));
            }
        }
    }

    /** An event the relay parked, as it parks one whose exchange the broker refused. */
    private void parked(String eventId) throws Exception {
        deadLetter(Topology.RELAY_PARKING_QUEUE, eventId, Map.of(MessageHeaders.DEAD_LETTER_REASON,
                "refused: ACCESS_REFUSED - access to exchange 'chaos.refused' in vhost '/' refused"));
    }

    /** An outbox row for an exchange the broker refuses, as the chaos run writes one. */
    private String refusedEvent() {
        String id = UUID.randomUUID().toString();
        pg.execute(ORDERS_DB, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                + " VALUES ('" + id + "', 'chaos.refused', 'refused-1', 'OrderCreated', 1, '{}', now())");
        return id;
    }

    private VerificationReport verify(Verifier.Expected expected) throws Exception {
        return verifier.verify(requests, expected, null, SETTLED, Duration.ZERO);
    }

    private Map<String, Integer> demoOnHand() {
        return verifier.onHand();
    }

    private VerificationReport verify(Set<String> injectedPoison) throws Exception {
        return verifier.verify(requests, injectedPoison, null, SETTLED, Duration.ZERO);
    }

    /** Commits an order as order-service does: order, lines, idempotency key and outbox event; records a 201. */
    private UUID order(Map<String, Integer> lines) throws Exception {
        UUID order = UUID.randomUUID();
        String key = "key-" + requests.size();
        try (var c = pg.connect(ORDERS_DB)) {
            c.setAutoCommit(false);
            c.createStatement().execute("INSERT INTO orders (id, customer_id, placed_at) VALUES ('" + order + "', 'c', now())");
            int lineNo = 0;
            for (Map.Entry<String, Integer> line : lines.entrySet()) {
                c.createStatement().execute("INSERT INTO order_lines (order_id, line_no, sku, quantity) VALUES ('"
                        + order + "', " + lineNo++ + ", '" + line.getKey() + "', " + line.getValue() + ")");
            }
            try (PreparedStatement key1 = c.prepareStatement(
                    "INSERT INTO idempotency_keys (idempotency_key, request_hash, order_id) VALUES (?, 'h', ?)")) {
                key1.setString(1, key);
                key1.setObject(2, order);
                key1.execute();
            }
            c.createStatement().execute("INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                    + " VALUES ('" + order + "', 'orders', '" + order + "', 'OrderCreated', 1, '{}', now())");
            c.commit();
        }
        requests.add(new OrderLoad.Request(requests.size(), key,
                lines.entrySet().stream().map(e -> new OrderLoad.Line(e.getKey(), e.getValue())).toList(), OrderLoad.Result.OK, order, 1, null));
        return order;
    }

    /** The effect inventory-service applies for a reserved order (the event id is the order id here), and its reply's. */
    private void reserve(UUID order, Map<String, Integer> lines) {
        List<String> statements = new ArrayList<>(List.of(
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + order + "', 'OrderCreated')",
                "INSERT INTO order_outcomes (order_id, status, message_id, decided_at) VALUES ('" + order + "', 'RESERVED', '" + order + "', now())"));
        lines.forEach((sku, quantity) -> {
            statements.add("INSERT INTO reservations (order_id, sku, quantity) VALUES ('" + order + "', '" + sku + "', " + quantity + ")");
            statements.add("UPDATE products SET reserved = reserved + " + quantity + " WHERE sku = '" + sku + "'");
        });
        pg.execute(INVENTORY_DB, statements.toArray(String[]::new));
        decide(order, reply(order, "InventoryReserved"), "CONFIRMED");
    }

    private void reject(UUID order) {
        pg.execute(INVENTORY_DB,
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('inventory-service', '" + order + "', 'OrderCreated')",
                "INSERT INTO order_outcomes (order_id, status, reason, message_id, decided_at) VALUES ('" + order
                        + "', 'REJECTED', 'insufficient stock', '" + order + "', now())");
        decide(order, reply(order, "InventoryRejected"), "REJECTED");
    }

    /** inventory's reply in its outbox, as its stock transaction writes it; returns its id. */
    private String reply(UUID order, String type) {
        String id = UUID.randomUUID().toString();
        pg.execute(INVENTORY_DB, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                + " VALUES ('" + id + "', 'inventory', '" + order + "', '" + type + "', 1, '{}', now())");
        return id;
    }

    /** What order-service does with the reply: its inbox row and the order's status, in one transaction. */
    private void decide(UUID order, String reply, String status) {
        pg.execute(ORDERS_DB,
                "INSERT INTO inbox (consumer, message_id, message_type) VALUES ('order-service', '" + reply + "', 'Inventory')",
                "UPDATE orders SET status = '" + status + "', decided_by = '" + reply + "', decided_at = now() WHERE id = '" + order + "'");
    }

    /** A dead letter as inventory-service parks one: with its reason. */
    private void deadLetter(String messageId) throws Exception {
        deadLetter(messageId, Map.of(MessageHeaders.DEAD_LETTER_REASON, "malformed JSON"));
    }

    private void deadLetter(String messageId, Map<String, Object> headers) throws Exception {
        deadLetter(Topology.INVENTORY_DEAD_LETTER_QUEUE, messageId, headers);
    }

    private void deadLetter(String queue, String messageId, Map<String, Object> headers) throws Exception {
        try (Connection connection = broker.connectionFactory(VHOST).newConnection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            channel.basicPublish("", queue,
                    new AMQP.BasicProperties.Builder().messageId(messageId).headers(headers).build(), "{".getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(5_000);
        }
    }

    /** A service's or a library's migrations, each with its own history table as at the services' start. */
    private void migrate(String database, String directory, String historyTable, Map<String, String> placeholders) {
        Flyway.configure()
                .dataSource(pg.jdbcUrl(database), pg.user(), pg.password())
                .locations("filesystem:" + SystemFixture.ROOT.resolve(directory))
                .table(historyTable)
                .baselineOnMigrate(!"flyway_schema_history".equals(historyTable))
                .baselineVersion("0")
                .placeholders(placeholders)
                .load().migrate();
    }
}
