package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The negative control's switch cannot reach a deployment: outside the chaos profile the service refuses to start. */
class DeduplicationGuardTest {

    @Test
    void deduplicationOffIsRefusedInProductionAndEveryOtherProfile() {
        for (List<String> profiles : List.of(List.of("prod"), List.of("dev"), List.of("test"), List.<String>of())) {
            assertThatThrownBy(() -> DeduplicationGuard.check(true, profiles))
                    .as("profiles %s", profiles)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("refused outside the 'chaos' profile");
        }
    }

    @Test
    void deduplicationOffStartsOnlyUnderTheChaosProfile() {
        assertThatCode(() -> DeduplicationGuard.check(true, List.of("prod", "chaos"))).doesNotThrowAnyException();
        assertThatCode(() -> DeduplicationGuard.check(false, List.of("prod"))).doesNotThrowAnyException();
    }

    @Test
    void outOfOrderIsRefusedOutsideTheChaosProfileAndStartsUnderIt() {
        for (List<String> profiles : List.of(List.of("prod"), List.of("dev"), List.of("test"), List.<String>of())) {
            assertThatThrownBy(() -> DeduplicationGuard.checkOrder(true, profiles))
                    .as("profiles %s", profiles)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("inbox.unsafe.apply-out-of-order=true is refused outside the 'chaos' profile");
        }
        assertThatCode(() -> DeduplicationGuard.checkOrder(true, List.of("prod", "chaos"))).doesNotThrowAnyException();
        assertThatCode(() -> DeduplicationGuard.checkOrder(false, List.of("prod"))).doesNotThrowAnyException();
    }
}
