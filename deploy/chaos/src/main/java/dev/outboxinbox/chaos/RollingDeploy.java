package dev.outboxinbox.chaos;

import java.util.List;
import java.util.Locale;

/**
 * A rolling deploy of OrderCreated v2 under load (--rolling-deploy producer-first|consumers-first): the run
 * starts with order-service writing v1 and two inventory-service instances reading v1 only, as before the
 * upgrade, and upgrades them one at a time at fixed points of the load, among the usual faults. Neither
 * binary is older: "before the upgrade" is each service's own switch (ORDERS_ORDER_CREATED_VERSION=1,
 * INVENTORY_ORDER_CREATED_VERSIONS=1), given as JVM options to the instance until its upgrade restarts it
 * without them; a kill meanwhile restarts it as it was.
 *
 * <p>Expected: in either order nothing lost, nothing applied twice, nothing reordered (the verifier), and
 * no dead letter for a version: consumers first, nothing is even held; producer first, each v2 event that
 * reaches a consumer reading v1 only is held, its partition paused behind it, until an upgraded instance
 * takes the partition (at least one must be, or the run proved nothing). Dead letters of v1 made before
 * the upgrade (orders of {@value #SKU} while a rule refused it) are sent back after it and read.
 */
record RollingDeploy(Order order) {

    enum Order {
        PRODUCER_FIRST, CONSUMERS_FIRST;

        static Order named(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT).replace('-', '_'));
        }
    }

    /** order-service before its upgrade. */
    static final String WRITES_V1 = "-Dorders.order-created-version=1";
    /** inventory-service before its upgrade. */
    static final String READS_V1_ONLY = "-Dinventory.order-created-versions=1";
    /** A SKU of the run's own, whose reservations a rule refuses until the upgrade is done: its orders' v1 events are dead-lettered. */
    static final String SKU = "SKU-ROLLING-REDRIVE";
    /** How many orders of {@link #SKU} are placed before the upgrade, one unit each. */
    static final int DEAD_LETTERED_ORDERS = 5;
    /** The rule's words, in each dead letter's reason: what the redelivery picks them by. */
    static final String REFUSAL = "chaos: " + SKU + " refused until the rolling deploy is done";

    /** @return null for "none" */
    static RollingDeploy of(String option) {
        return option == null || option.equals("none") ? null : new RollingDeploy(Order.named(option));
    }

    /** The upgrade's steps at fixed shares of the load, then the redelivery once every instance reads v2. */
    List<Schedule.Step> steps(long loadMillis) {
        List<Schedule.Fault> upgrades = order == Order.PRODUCER_FIRST
                ? List.of(Schedule.Fault.UPGRADE_ORDER_SERVICE, Schedule.Fault.UPGRADE_INVENTORY, Schedule.Fault.UPGRADE_SECOND_INVENTORY)
                : List.of(Schedule.Fault.UPGRADE_INVENTORY, Schedule.Fault.UPGRADE_SECOND_INVENTORY, Schedule.Fault.UPGRADE_ORDER_SERVICE);
        return List.of(
                new Schedule.Step((long) (loadMillis * 0.20), upgrades.get(0), 0),
                new Schedule.Step((long) (loadMillis * 0.35), upgrades.get(1), 0),
                new Schedule.Step((long) (loadMillis * 0.50), upgrades.get(2), 0),
                new Schedule.Step((long) (loadMillis * 0.60), Schedule.Fault.REDELIVER_V1_DEAD_LETTERS, 0));
    }

    String describe() {
        return order == Order.PRODUCER_FIRST
                ? "ROLLING DEPLOY, producer first: order-service v1 → v2, then each inventory-service instance v1 → v1+v2"
                : "ROLLING DEPLOY, consumers first: each inventory-service instance v1 → v1+v2, then order-service v1 → v2";
    }
}
