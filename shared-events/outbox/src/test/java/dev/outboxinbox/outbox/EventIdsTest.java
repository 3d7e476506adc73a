package dev.outboxinbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class EventIdsTest {

    @Test
    void anIdIsAVersion7UuidOfTheCurrentMillisecond() {
        long before = System.currentTimeMillis();
        UUID id = EventIds.next();
        long after = System.currentTimeMillis();
        assertThat(id.version()).isEqualTo(7);
        assertThat(id.variant()).isEqualTo(2);
        assertThat(id.getMostSignificantBits() >>> 16).isBetween(before, after);
    }

    @Test
    void idsAreUniqueAndTheirTextSortsByTime() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 10_000; j++) {
                ids.add(EventIds.next().toString());
            }
            Thread.onSpinWait();
            long now = System.currentTimeMillis();
            while (System.currentTimeMillis() == now) {
                Thread.onSpinWait();
            }
        }
        assertThat(new HashSet<>(ids)).hasSize(ids.size());
        // Across milliseconds, the text (the inbox's message_id column) sorts as the ids were made.
        assertThat(ids.get(0).compareTo(ids.get(10_000))).isNegative();
        assertThat(ids.get(10_000).compareTo(ids.get(20_000))).isNegative();
    }
}
