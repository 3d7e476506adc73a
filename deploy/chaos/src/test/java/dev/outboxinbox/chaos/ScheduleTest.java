package dev.outboxinbox.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ScheduleTest {

    private static final Schedule.Counts FULL = new Schedule.Counts(10, 2, 3, 2, 2, 2, 2);

    @Test
    void theSameSeedGivesTheSameScheduleAndAnotherSeedAnother() {
        assertThat(Schedule.of(FULL, 300_000, 42)).isEqualTo(Schedule.of(FULL, 300_000, 42));
        assertThat(Schedule.of(FULL, 300_000, 43)).isNotEqualTo(Schedule.of(FULL, 300_000, 42));
    }

    @Test
    void everyFaultAsOftenAsAskedAndThreeKillsOfEachService() {
        Map<Schedule.Fault, Long> counts = Schedule.of(FULL, 300_000, 1).steps().stream()
                .collect(Collectors.groupingBy(Schedule.Step::fault, Collectors.counting()));

        assertThat(counts).containsEntry(Schedule.Fault.BROKER_RESTART, 10L)
                .containsEntry(Schedule.Fault.BROKER_NODE_RESTART, 2L)
                .containsEntry(Schedule.Fault.KILL_RELAY, 3L)
                .containsEntry(Schedule.Fault.KILL_INVENTORY, 3L)
                .containsEntry(Schedule.Fault.KILL_ORDER_SERVICE, 3L)
                .containsEntry(Schedule.Fault.POSTGRES_RESTART, 2L)
                .containsEntry(Schedule.Fault.BROKER_DOWN_WHILE_RELAY_STARTS, 2L)
                .containsEntry(Schedule.Fault.POISON, 2L)
                .containsEntry(Schedule.Fault.REPUBLISH, 2L);
    }

    @Test
    void faultsFallWithinTheLoadInOrderWithBoundedOutages() {
        Schedule schedule = Schedule.of(FULL, 300_000, 7);

        assertThat(schedule.steps()).allSatisfy(step -> {
            assertThat(step.atMillis()).isBetween(30_000L, 270_000L);
            assertThat(step.outageMillis()).isBetween(1_000L, 5_000L);
        });
        assertThat(schedule.steps()).extracting(Schedule.Step::atMillis).isSorted();
        assertThat(schedule.steps().stream().map(Schedule.Step::fault).collect(Collectors.toMap(Function.identity(), f -> 1, Integer::sum)))
                .hasSize(Schedule.Fault.values().length);
    }
}
