package dev.outboxinbox.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The faults of a run and when each starts, drawn from a seed: the same seed, the same schedule.
 * They are spread evenly over the load, in a shuffled order, each with a seeded outage length.
 */
record Schedule(List<Step> steps) {

    enum Fault {
        /** rabbitmqctl stop_app … start_app: every connection drops, queues stay. The headline fault. */
        BROKER_RESTART("broker restart (stop_app/start_app)"),
        /** The whole broker node stopped and started again. */
        BROKER_NODE_RESTART("broker node restart"),
        KILL_RELAY("kill -9 outbox-relay"),
        KILL_INVENTORY("kill -9 inventory-service"),
        KILL_ORDER_SERVICE("kill -9 order-service"),
        POSTGRES_RESTART("PostgreSQL restart"),
        /** The relay starts while the broker is down, and must wait for it. */
        BROKER_DOWN_WHILE_RELAY_STARTS("broker down while outbox-relay starts"),
        /** Malformed messages published straight to the orders exchange: they must end in the dead-letter queue. */
        POISON("poison messages published"),
        /** Delivered events published again, as a replay would: the inbox must absorb them. */
        REPUBLISH("delivered events republished");

        final String description;

        Fault(String description) {
            this.description = description;
        }
    }

    record Step(long atMillis, Fault fault, long outageMillis) {
    }

    record Counts(int brokerRestarts, int brokerNodeRestarts, int killsPerService, int postgresRestarts,
                  int brokerDownWhileRelayStarts, int poisonBursts, int republishBursts) {
    }

    static Schedule of(Counts counts, long loadMillis, long seed) {
        List<Fault> faults = new ArrayList<>();
        add(faults, Fault.BROKER_RESTART, counts.brokerRestarts());
        add(faults, Fault.BROKER_NODE_RESTART, counts.brokerNodeRestarts());
        add(faults, Fault.KILL_RELAY, counts.killsPerService());
        add(faults, Fault.KILL_INVENTORY, counts.killsPerService());
        add(faults, Fault.KILL_ORDER_SERVICE, counts.killsPerService());
        add(faults, Fault.POSTGRES_RESTART, counts.postgresRestarts());
        add(faults, Fault.BROKER_DOWN_WHILE_RELAY_STARTS, counts.brokerDownWhileRelayStarts());
        add(faults, Fault.POISON, counts.poisonBursts());
        add(faults, Fault.REPUBLISH, counts.republishBursts());
        Random random = new Random(seed);
        Collections.shuffle(faults, random);
        List<Step> steps = new ArrayList<>();
        // From 10 % to 90 % of the load: the system is busy before the first fault and after the last.
        for (int i = 0; i < faults.size(); i++) {
            long at = (long) (loadMillis * (0.1 + 0.8 * i / Math.max(1, faults.size())));
            steps.add(new Step(at, faults.get(i), 1_000 + random.nextInt(4_000)));
        }
        return new Schedule(List.copyOf(steps));
    }

    private static void add(List<Fault> faults, Fault fault, int times) {
        for (int i = 0; i < times; i++) {
            faults.add(fault);
        }
    }
}
