package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.events.EventSchema;
import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.OrderCancelled;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.InboxHandler;
import dev.outboxinbox.inbox.InboxMessage;
import dev.outboxinbox.inbox.Outcome;
import io.quarkus.narayana.jta.QuarkusTransaction;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * OrderCancelled: what the order reserved is released, once, and InventoryReleased says what; a
 * rejected order releases nothing; a cancellation that overtakes its order leaves a tombstone and the
 * late order reserves nothing; and a cancellation racing its order's creation in another transaction
 * (two instances during a partition handover) releases exactly what the creation reserved.
 */
@InventoryServiceTest
class CancellationTest {

    @Inject
    InventoryDatabase db;

    @Inject
    InboxHandler handler;

    @Test
    void aCancellationReleasesWhatTheOrderReservedAndSaysSo() throws Exception {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 3);
        OrderCancelled cancel = Broker.cancellation(order);

        Broker.publish(order);
        Broker.publish(cancel);

        await().atMost(Duration.ofSeconds(30)).until(() -> cancelled(order.orderId()) == 1);
        assertThat(db.reserved(sku)).isZero();
        assertThat(released(order.orderId(), sku)).isEqualTo(3);
        assertThat(db.count("SELECT quantity FROM reservations WHERE order_id = ?", order.orderId()))
                .as("the reservation stays, as history").isEqualTo(3);
        assertThat(db.status(order.orderId())).isEqualTo("RESERVED");
        assertThat(db.replies(order.orderId())).containsExactly("InventoryReserved", "InventoryReleased");
        assertThat(release(order.orderId()).lines()).containsExactly(new InventoryReleased.Line(sku, 3));
        await().atMost(Duration.ofSeconds(10)).until(() -> Broker.messagesWaitingForInventory() == 0);
    }

    @Test
    void aCancellationDeliveredAgainOrSentTwiceReleasesOnce() {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 4);
        OrderCancelled cancel = Broker.cancellation(order);
        OrderCancelled again = Broker.cancellation(order); // the same cancellation under another event id

        assertThat(handle(order)).isEqualTo(new Outcome.Applied("RESERVED"));
        assertThat(handle(cancel)).isEqualTo(new Outcome.Applied("RELEASED"));
        assertThat(handle(cancel)).as("delivered again").isInstanceOf(Outcome.Duplicate.class);
        assertThat(handle(again)).as("another event id, the order already released").isInstanceOf(Outcome.Unchanged.class);

        assertThat(db.reserved(sku)).isZero();
        assertThat(released(order.orderId(), sku)).isEqualTo(4);
        assertThat(db.count("SELECT count(*) FROM cancellations WHERE order_id = ? AND message_id = ?",
                order.orderId(), cancel.eventId().toString())).isOne();
        assertThat(db.replies(order.orderId())).containsExactly("InventoryReserved", "InventoryReleased");
    }

    @Test
    void aRejectedOrderReleasesNothingAndTheReplySaysNothing() throws Exception {
        String sku = db.newProduct(2);
        String other = db.newProduct(10);
        db.execute("UPDATE products SET reserved = 1 WHERE sku = '" + other + "'"); // someone else's: must stay
        OrderCreated order = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "c",
                List.of(new OrderCreated.Line(other, 1), new OrderCreated.Line(sku, 3)), Instant.now());

        assertThat(handle(order)).isEqualTo(new Outcome.Applied("REJECTED"));
        assertThat(handle(Broker.cancellation(order))).isEqualTo(new Outcome.Applied("NOTHING_RESERVED"));

        assertThat(db.reserved(sku)).isZero();
        assertThat(db.reserved(other)).isOne();
        assertThat(db.count("SELECT count(*) FROM releases WHERE order_id = ?", order.orderId())).isZero();
        assertThat(cancelled(order.orderId())).isOne();
        assertThat(release(order.orderId()).lines()).isEmpty();
    }

    @Test
    void aCancellationBeforeItsOrderLeavesATombstoneAndTheLateOrderReservesNothing() throws Exception {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 5);

        assertThat(handle(Broker.cancellation(order))).isEqualTo(new Outcome.Applied("CANCELLED_FIRST"));
        assertThat(db.status(order.orderId())).isEqualTo("CANCELLED_FIRST");
        assertThat(release(order.orderId()).lines()).isEmpty();

        assertThat(handle(order)).as("acknowledged, as a reordering, not as a duplicate")
                .isEqualTo(new Outcome.Applied("AFTER_CANCELLATION"));
        assertThat(db.reserved(sku)).isZero();
        assertThat(db.count("SELECT count(*) FROM reservations WHERE order_id = ?", order.orderId())).isZero();
        assertThat(db.status(order.orderId())).isEqualTo("CANCELLED_FIRST");
        assertThat(db.replies(order.orderId())).as("no decision after the release").containsExactly("InventoryReleased");
    }

    /** The order the partition's batch brings them in is the order they are applied in, whichever it is. */
    @Test
    void aBatchIsAppliedInTheOrderItArrived() {
        String sku = db.newProduct(100);
        OrderCreated inOrder = Broker.order(sku, 2);
        OrderCreated reordered = Broker.order(sku, 3);
        OrderCancelled first = Broker.cancellation(inOrder);
        OrderCancelled second = Broker.cancellation(reordered);

        List<Outcome> outcomes = handler.handle(List.of(message(inOrder), message(first), message(second), message(reordered)));

        assertThat(outcomes).containsExactly(new Outcome.Applied("RESERVED"), new Outcome.Applied("RELEASED"),
                new Outcome.Applied("CANCELLED_FIRST"), new Outcome.Applied("AFTER_CANCELLATION"));
        assertThat(db.reserved(sku)).isZero();
        assertThat(released(inOrder.orderId(), sku)).isEqualTo(2);
        assertThat(db.status(reordered.orderId())).isEqualTo("CANCELLED_FIRST");
    }

    /**
     * An outcome RESERVED whose lines the transaction cannot see must never be released as zero: the
     * cancellation fails as transient (SQLSTATE 40001, which the inbox retries) and changes nothing.
     */
    @Test
    void aReservedOrderWhoseLinesCannotBeSeenIsRetriedNeverReleasedAsNothing() {
        OrderCreated order = Broker.order(db.newProduct(100), 1);
        db.execute("INSERT INTO order_outcomes (order_id, status, message_id, decided_at) VALUES ('" + order.orderId()
                + "', 'RESERVED', 'no-lines', now())");

        assertThatThrownBy(() -> handle(Broker.cancellation(order))).satisfies(e -> assertThat(sqlState(e)).isEqualTo("40001"));
        assertThat(cancelled(order.orderId())).isZero();
        assertThat(db.replies(order.orderId())).isEmpty();
    }

    /**
     * Two instances during a handover: the order's creation is applied in one transaction, not yet
     * committed, when its cancellation is applied in another. The cancellation waits for the creation,
     * then releases exactly what it reserved.
     */
    @Test
    void aCancellationRacingItsOrdersCreationReleasesWhatTheCreationReserved() throws Exception {
        String sku = db.newProduct(100);
        OrderCreated order = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "c",
                List.of(new OrderCreated.Line(sku, 6), new OrderCreated.Line(db.newProduct(100), 1)), Instant.now());
        OrderCancelled cancel = Broker.cancellation(order);

        Race race = new Race(order, cancel);

        assertThat(race.first()).isEqualTo(new Outcome.Applied("RESERVED"));
        assertThat(race.second()).isEqualTo(new Outcome.Applied("RELEASED"));
        assertThat(db.reserved(sku)).isZero();
        assertThat(released(order.orderId(), sku)).isEqualTo(6);
        assertThat(db.count("SELECT count(*) FROM releases WHERE order_id = ?", order.orderId())).isEqualTo(2);
        assertThat(release(order.orderId()).lines()).hasSize(2).contains(new InventoryReleased.Line(sku, 6));
    }

    /** The other way round: the tombstone is not committed yet when the creation arrives; the creation waits and reserves nothing. */
    @Test
    void aCreationRacingItsOrdersCancellationReservesNothing() throws Exception {
        String sku = db.newProduct(100);
        OrderCreated order = Broker.order(sku, 6);

        Race race = new Race(Broker.cancellation(order), order);

        assertThat(race.first()).isEqualTo(new Outcome.Applied("CANCELLED_FIRST"));
        assertThat(race.second()).isEqualTo(new Outcome.Applied("AFTER_CANCELLATION"));
        assertThat(db.reserved(sku)).isZero();
        assertThat(db.count("SELECT count(*) FROM reservations WHERE order_id = ?", order.orderId())).isZero();
    }

    /**
     * The first event applied in a transaction held open (not committed) until the second, applied in
     * a transaction of its own on another thread, waits on a lock of the first; then the first commits.
     */
    private final class Race {
        /** Two threads of its own: the first blocks until the second waits, whatever the machine's common pool. */
        private final java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2);
        private final CompletableFuture<Outcome> first;
        private final CompletableFuture<Outcome> second;

        Race(OrderEvent firstEvent, OrderEvent secondEvent) throws Exception {
            CountDownLatch applied = new CountDownLatch(1);
            CountDownLatch commit = new CountDownLatch(1);
            long waitingBefore = waitingOnLocks();
            first = CompletableFuture.supplyAsync(() -> QuarkusTransaction.requiringNew().call(() -> {
                Outcome outcome = handle(firstEvent);
                applied.countDown();
                if (!commit.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never told to commit");
                }
                return outcome;
            }), threads);
            assertThat(applied.await(30, TimeUnit.SECONDS)).as("the first applied, not committed").isTrue();
            second = CompletableFuture.supplyAsync(() -> handle(secondEvent), threads);
            await().atMost(Duration.ofSeconds(30)).until(() -> waitingOnLocks() > waitingBefore);
            assertThat(second).as("the second waits for the first").isNotDone();
            commit.countDown();
            first.get(30, TimeUnit.SECONDS);
            second.get(30, TimeUnit.SECONDS);
            threads.shutdown();
        }

        Outcome first() {
            return first.join();
        }

        Outcome second() {
            return second.join();
        }
    }

    private long waitingOnLocks() {
        return db.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    }

    private Outcome handle(OrderEvent event) {
        return handler.handle(List.of(message(event))).get(0);
    }

    private static InboxMessage<OrderEvent> message(OrderEvent event) {
        return new InboxMessage<>(event.eventId().toString(), event.eventType(), event);
    }

    private long cancelled(UUID orderId) {
        return db.count("SELECT count(*) FROM cancellations WHERE order_id = ?", orderId);
    }

    private long released(UUID orderId, String sku) {
        return db.count("SELECT coalesce(sum(quantity), 0) FROM releases WHERE order_id = ? AND sku = ?", orderId, sku);
    }

    /** The InventoryReleased in this service's outbox for the order, decoded against its contract. */
    private InventoryReleased release(UUID orderId) throws Exception {
        Map<String, Object> row = db.row("""
                SELECT id, type, payload::text AS payload FROM outbox WHERE aggregateid = ? AND type = 'InventoryReleased'""",
                orderId.toString());
        return (InventoryReleased) EventSchema.decode(row.get("id").toString(), InventoryReleased.TYPE, 1,
                row.get("payload").toString().getBytes(StandardCharsets.UTF_8), InventoryEvent.class);
    }

    private static String sqlState(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql.getSQLState();
            }
        }
        return null;
    }
}
