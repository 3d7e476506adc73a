package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** inbox_deliveries_near_limit_total: a delivery the broker counted within two of the queue's delivery limit. */
class DeliveryLimitTest {

    private final InboxMetrics metrics = new InboxMetrics(new SimpleMeterRegistry(), "test-consumer");
    private final MessageClassifier classifier = new MessageClassifier(1024,
            (messageId, type, version, body) -> new String(body, StandardCharsets.UTF_8), 10, metrics);

    @Test
    void aDeliveryNearTheLimitIsCountedAndStillClassified() {
        assertThat(classify(null)).isInstanceOf(Classification.Accepted.class);
        assertThat(classify(7)).isInstanceOf(Classification.Accepted.class);
        assertThat(metrics.nearDeliveryLimitCount()).isZero();
        assertThat(classify(8)).isInstanceOf(Classification.Accepted.class);
        assertThat(classify(9L)).isInstanceOf(Classification.Accepted.class);
        assertThat(metrics.nearDeliveryLimitCount()).isEqualTo(2);
    }

    private Classification classify(Number deliveryCount) {
        Map<String, Object> headers = new HashMap<>(Map.of(InboxHeaders.SCHEMA_VERSION, 1));
        if (deliveryCount != null) {
            headers.put("x-delivery-count", deliveryCount);
        }
        return classifier.classify("id-1", "SomethingHappened", headers, "{}".getBytes(StandardCharsets.UTF_8));
    }
}
