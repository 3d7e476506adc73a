package dev.outboxinbox.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ScheduleTest {

    private static final Map<String, Integer> FULL = Map.ofEntries(Map.entry("broker-restarts", 10),
            Map.entry("broker-node-restarts", 2), Map.entry("kills", 3), Map.entry("postgres-restarts", 2),
            Map.entry("broker-down-while-relay-starts", 2), Map.entry("poison", 2), Map.entry("republish", 2),
            Map.entry("slot-recreations", 1), Map.entry("relay-fresh-starts", 1), Map.entry("foreign-messages", 1),
            Map.entry("inventory-db-refusals", 1), Map.entry("inventory-db-outages", 1), Map.entry("binding-removals", 1),
            Map.entry("second-inventory", 1), Map.entry("relay-takeovers", 2), Map.entry("consumer-scaling", 2),
            Map.entry("double-kills", 2), Map.entry("relay-freezes", 2), Map.entry("relay-session-ends", 2),
            Map.entry("inventory-freezes", 1), Map.entry("slow-stops", 2), Map.entry("postgres-restarts-with-standbys", 1),
            Map.entry("refused-exchanges", 2), Map.entry("declaration-failures", 1));

    /** A profile of ChaosRun's, as the fault counts Schedule.of takes. */
    private static Map<String, Integer> profile(String name) {
        return ChaosRun.PROFILES.get(name).entrySet().stream()
                .filter(e -> java.util.Arrays.stream(Schedule.Fault.values()).anyMatch(f -> e.getKey().equals(f.option)))
                .collect(Collectors.toMap(Map.Entry::getKey, e -> Integer.parseInt(e.getValue())));
    }

    @Test
    void theSameSeedGivesTheSameScheduleAndAnotherSeedAnother() {
        assertThat(Schedule.of(FULL, 300_000, 42)).isEqualTo(Schedule.of(FULL, 300_000, 42));
        assertThat(Schedule.of(FULL, 300_000, 43)).isNotEqualTo(Schedule.of(FULL, 300_000, 42));
    }

    @Test
    void everyFaultAsOftenAsAskedAndThreeKillsOfEachService() {
        assertThat(profile("full")).containsAllEntriesOf(Map.of("relay-freezes", 2, "relay-session-ends", 2, "inventory-freezes", 1,
                "slow-stops", 2, "postgres-restarts-with-standbys", 1, "refused-exchanges", 2, "declaration-failures", 1));
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
                .containsEntry(Schedule.Fault.REPUBLISH, 2L)
                .containsEntry(Schedule.Fault.SLOT_RECREATED, 1L)
                .containsEntry(Schedule.Fault.INVENTORY_DB_DOWN, 1L)
                .containsEntry(Schedule.Fault.SECOND_INVENTORY, 1L)
                .containsEntry(Schedule.Fault.RELAY_TAKEOVER, 2L)
                .containsEntry(Schedule.Fault.CONSUMER_SCALING, 2L)
                .containsEntry(Schedule.Fault.KILL_TWO_CONSUMERS, 2L)
                .containsEntry(Schedule.Fault.RELAY_FREEZE, 2L)
                .containsEntry(Schedule.Fault.RELAY_SESSION_ENDED, 2L)
                .containsEntry(Schedule.Fault.INVENTORY_FROZEN_MID_TRANSACTION, 1L)
                .containsEntry(Schedule.Fault.SLOW_STOP, 2L)
                .containsEntry(Schedule.Fault.POSTGRES_RESTART_WITH_STANDBYS, 1L)
                .containsEntry(Schedule.Fault.REFUSED_EXCHANGE, 2L)
                .containsEntry(Schedule.Fault.DECLARATION_FAILURE, 1L);
    }

    @Test
    void theShortRunHasOneFrozenInventoryInstanceRefusedRowsAndAFailingDeclarationAndNoRelayFreeze() {
        Map<Schedule.Fault, Long> counts = Schedule.of(profile("short"), 40_000, 1).steps().stream()
                .collect(Collectors.groupingBy(Schedule.Step::fault, Collectors.counting()));

        assertThat(counts).containsEntry(Schedule.Fault.INVENTORY_FROZEN_MID_TRANSACTION, 1L)
                .containsEntry(Schedule.Fault.REFUSED_EXCHANGE, 1L)
                .containsEntry(Schedule.Fault.DECLARATION_FAILURE, 1L)
                .doesNotContainKeys(Schedule.Fault.RELAY_FREEZE, Schedule.Fault.RELAY_SESSION_ENDED, Schedule.Fault.SLOW_STOP,
                        Schedule.Fault.POSTGRES_RESTART_WITH_STANDBYS);
        assertThat(counts.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(16);
    }

    @Test
    void theControlRunMakesCopiesAndNothingElse() {
        Map<Schedule.Fault, Long> counts = Schedule.of(profile("control"), 20_000, 1).steps().stream()
                .collect(Collectors.groupingBy(Schedule.Step::fault, Collectors.counting()));

        assertThat(counts).containsEntry(Schedule.Fault.REPUBLISH, 1L)
                .containsEntry(Schedule.Fault.KILL_RELAY, 1L)
                .containsEntry(Schedule.Fault.KILL_INVENTORY, 1L)
                .containsEntry(Schedule.Fault.KILL_ORDER_SERVICE, 1L);
        assertThat(counts.keySet()).as("faults that make copies, and no others")
                .allMatch(fault -> fault == Schedule.Fault.REPUBLISH || fault.name().startsWith("KILL_"));
        assertThat(ChaosRun.PROFILES.get("control").keySet()).as("every option the other profiles set")
                .isEqualTo(ChaosRun.PROFILES.get("short").keySet());
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
                .hasSize((int) java.util.Arrays.stream(Schedule.Fault.values()).filter(f -> f.option != null).count());
    }

    @Test
    void aRollingDeployUpgradesOneAtATimeInItsOrderThenRedeliversAmongTheFaults() {
        long load = 50_000;
        Schedule faults = Schedule.of(profile("rolling"), load, 1);
        Schedule producerFirst = faults.with(RollingDeploy.of("producer-first").steps(load));
        Schedule consumersFirst = faults.with(RollingDeploy.of("consumers-first").steps(load));

        assertThat(producerFirst.steps()).extracting(Schedule.Step::atMillis).isSorted();
        assertThat(producerFirst.steps()).hasSize(faults.steps().size() + 4);
        assertThat(producerFirst.steps().stream().map(Schedule.Step::fault).filter(f -> f.option == null).toList()).containsExactly(
                Schedule.Fault.UPGRADE_ORDER_SERVICE, Schedule.Fault.UPGRADE_INVENTORY, Schedule.Fault.UPGRADE_SECOND_INVENTORY,
                Schedule.Fault.REDELIVER_V1_DEAD_LETTERS);
        assertThat(consumersFirst.steps().stream().map(Schedule.Step::fault).filter(f -> f.option == null).toList()).containsExactly(
                Schedule.Fault.UPGRADE_INVENTORY, Schedule.Fault.UPGRADE_SECOND_INVENTORY, Schedule.Fault.UPGRADE_ORDER_SERVICE,
                Schedule.Fault.REDELIVER_V1_DEAD_LETTERS);
        assertThat(RollingDeploy.of("none")).isNull();
        // Its own faults: broker restarts, a kill of each service, poison; none that starts an inventory-service of its own.
        assertThat(profile("rolling")).containsEntry("broker-restarts", 2).containsEntry("kills", 1).containsEntry("poison", 1)
                .containsEntry("second-inventory", 0).containsEntry("inventory-freezes", 0).containsEntry("declaration-failures", 0);
        assertThat(ChaosRun.PROFILES.get("rolling").keySet()).isEqualTo(ChaosRun.PROFILES.get("short").keySet());
    }
}
