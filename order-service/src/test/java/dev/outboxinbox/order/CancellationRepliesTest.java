package dev.outboxinbox.order;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.InventoryRejected;
import dev.outboxinbox.events.InventoryReleased;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.inbox.InboxMetrics;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Inventory's InventoryReleased finishes a cancellation (CANCELLING → CANCELLED, once, naming the
 * reply); a decision that arrives after the cancel request is recorded without moving the status; a
 * release for an order nobody cancelled is parked with the reason. Through the real broker and inbox.
 */
@OrderServiceTest
class CancellationRepliesTest {

    @Inject
    OrderDatabase db;

    @Inject
    InboxMetrics metrics;

    @Test
    void theReleaseFinishesTheCancellationOnce() throws Exception {
        UUID orderId = cancelledOrder();
        InventoryReleased release = released(orderId);
        InboxMetricsWatch watch = new InboxMetricsWatch();

        InventoryRepliesTest.publish(release);
        InventoryRepliesTest.publish(release);
        InventoryRepliesTest.publish(released(orderId)); // a second release, under another id: changes nothing
        await().atMost(Duration.ofSeconds(30)).until(() -> watch.seen() >= 3);

        assertThat(db.rows("SELECT status, cancelled_by, cancelled_at IS NOT NULL AS at FROM orders WHERE id = ?", orderId))
                .singleElement().isEqualTo(Map.of("status", "CANCELLED", "cancelled_by", release.eventId().toString(), "at", true));
        assertThat(metrics.applied() - watch.appliedBefore).isOne();
        CancellingAnOrderTest.cancel(orderId).then().statusCode(200);
    }

    @Test
    void aDecisionAfterTheCancelRequestIsRecordedAndTheOrderStaysCancellingUntilTheRelease() throws Exception {
        UUID orderId = cancelledOrder();
        InventoryReserved reserved = new InventoryReserved(UUID.randomUUID(), orderId, Instant.now());

        InventoryRepliesTest.publish(reserved);
        await().atMost(Duration.ofSeconds(30)).until(() -> reserved.eventId().toString().equals(column(orderId, "decided_by")));
        assertThat(column(orderId, "status")).isEqualTo("CANCELLING");

        InventoryReleased release = released(orderId);
        InventoryRepliesTest.publish(release);
        await().atMost(Duration.ofSeconds(30)).until(() -> "CANCELLED".equals(column(orderId, "status")));
        assertThat(column(orderId, "cancelled_by")).isEqualTo(release.eventId().toString());
        assertThat(column(orderId, "decided_by")).isEqualTo(reserved.eventId().toString());
    }

    @Test
    void aRejectionAfterTheReleaseIsRecordedAndTheOrderStaysCancelled() throws Exception {
        UUID orderId = cancelledOrder();
        InventoryRepliesTest.publish(released(orderId));
        await().atMost(Duration.ofSeconds(30)).until(() -> "CANCELLED".equals(column(orderId, "status")));

        InventoryRejected rejected = new InventoryRejected(UUID.randomUUID(), orderId, "insufficient stock", Instant.now());
        InventoryRepliesTest.publish(rejected);
        await().atMost(Duration.ofSeconds(30)).until(() -> rejected.eventId().toString().equals(column(orderId, "decided_by")));
        assertThat(column(orderId, "status")).isEqualTo("CANCELLED");
        assertThat(column(orderId, "status_reason")).isEqualTo("insufficient stock");
    }

    @Test
    void aReleaseForAnOrderNobodyCancelledIsDeadLetteredWithTheReason() throws Exception {
        UUID orderId = InventoryRepliesTest.placeOrder();
        InventoryReleased stray = released(orderId);
        InventoryRepliesTest.publish(stray);

        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            parked.addAll(InventoryRepliesTest.takeDeadLetters());
            return parked.stream().anyMatch(d -> stray.eventId().toString().equals(d.getProps().getMessageId()));
        });
        assertThat(parked).filteredOn(d -> stray.eventId().toString().equals(d.getProps().getMessageId())).first()
                .satisfies(d -> assertThat(String.valueOf(d.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)))
                        .contains("which was never cancelled (it is PENDING)"));
        assertThat(column(orderId, "status")).isEqualTo("PENDING");
    }

    private UUID cancelledOrder() {
        UUID orderId = InventoryRepliesTest.placeOrder();
        CancellingAnOrderTest.cancel(orderId).then().statusCode(202);
        return orderId;
    }

    private static InventoryReleased released(UUID orderId) {
        return new InventoryReleased(UUID.randomUUID(), orderId, List.of(new InventoryReleased.Line("SKU-APPLE", 2)), Instant.now());
    }

    private String column(UUID orderId, String column) {
        Object value = db.rows("SELECT " + column + " FROM orders WHERE id = ?", orderId).get(0).get(column);
        return value == null ? null : value.toString();
    }

    /** Messages the inbox took in since it was made: applied, duplicate or unchanged. */
    private final class InboxMetricsWatch {
        final long appliedBefore = metrics.applied();
        final long seenBefore = seen(metrics);

        long seen() {
            return seen(metrics) - seenBefore;
        }

        private static long seen(InboxMetrics metrics) {
            return metrics.applied() + metrics.duplicates() + metrics.unchanged();
        }
    }
}
