package dev.outboxinbox.inbox.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.outboxinbox.events.EventExamples;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.inbox.NotReadableYetException;
import dev.outboxinbox.inbox.RejectedMessageException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The door's checks for this system's events: read, rejected with the schema's words, or held for a newer build. */
class ContractDecoderTest {

    static final class OrderEvents extends ContractDecoder<OrderEvent> {
        OrderEvents() {
            super(OrderEvent.class);
        }

        OrderEvents(Map<String, Set<Integer>> narrowed) {
            super(OrderEvent.class, narrowed);
        }
    }

    private static final OrderCreated CREATED = (OrderCreated) EventExamples.of(OrderCreated.TYPE);
    private static final byte[] BODY = CREATED.payloadJson().getBytes(StandardCharsets.UTF_8);

    @Test
    void aValidEventOfATypeItTakesIsRead() throws Exception {
        assertThat(new OrderEvents().decode(CREATED.eventId().toString(), OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION, BODY))
                .isEqualTo(CREATED);
    }

    @Test
    void whatCanNeverSucceedIsRejectedWithTheReason() {
        assertThatThrownBy(() -> new OrderEvents().decode(CREATED.eventId().toString(), OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION,
                "{}".getBytes(StandardCharsets.UTF_8)))
                .isExactlyInstanceOf(RejectedMessageException.class).hasMessageContaining("required");
        assertThatThrownBy(() -> new OrderEvents().decode(CREATED.eventId().toString(), "InventoryReserved", 1, BODY))
                .as("a type of another family").isExactlyInstanceOf(RejectedMessageException.class);
        assertThatThrownBy(() -> new OrderEvents().decode("another-id", OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION, BODY))
                .as("event id is not the message id").isExactlyInstanceOf(RejectedMessageException.class);
    }

    @Test
    void theNextVersionIsHeldByABuildThatReadsOnlyTheOnesBeforeIt() {
        assertThatThrownBy(() -> new OrderEvents(Map.of(OrderCreated.TYPE, Set.of(1)))
                .decode(CREATED.eventId().toString(), OrderCreated.TYPE, OrderCreated.SCHEMA_VERSION, BODY))
                .isInstanceOf(NotReadableYetException.class);
        assertThatThrownBy(() -> new OrderEvents(Map.of(OrderCreated.TYPE, Set.of(7))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reading versions [7] of OrderCreated");
    }
}
