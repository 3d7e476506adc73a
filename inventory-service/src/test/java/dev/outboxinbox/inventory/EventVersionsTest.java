package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.outboxinbox.events.OrderCreated;
import jakarta.inject.Inject;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Two versions of OrderCreated in flight at once, as through a rolling deploy: v1 events still in the queue (or
 * redelivered from the dead letters) beside v2 ones. This consumer reads both, v1 upcast to v2 at the door.
 */
@InventoryServiceTest
class EventVersionsTest {

    @Inject
    InventoryDatabase db;

    @Test
    void anOrderCreatedOfVersion1AndOneOfVersion2AreBothApplied() {
        String sku = db.newProduct(100);
        OrderCreated.V1 old = new OrderCreated.V1(UUID.randomUUID(), UUID.randomUUID(), "customer-v1",
                List.of(new OrderCreated.V1.Line(sku, 3)), Instant.now());
        OrderCreated priced = new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "customer-v2", "USD",
                List.of(new OrderCreated.Line(sku, 4, new BigDecimal("9.99"))), Instant.now());

        Broker.publish(old);
        Broker.publish(priced);

        await().atMost(Duration.ofSeconds(30)).until(() -> "RESERVED".equals(db.status(old.orderId()))
                && "RESERVED".equals(db.status(priced.orderId())));
        assertThat(db.reserved(sku)).isEqualTo(7);
    }
}
