package dev.outboxinbox.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The faults of a run and when each starts, drawn from a seed: the same seed, the same schedule.
 * They are spread evenly over the load, in a shuffled order, each with a seeded outage length.
 */
record Schedule(List<Step> steps) {

    enum Fault {
        /** rabbitmqctl stop_app … start_app: every connection drops, queues stay. The headline fault. */
        BROKER_RESTART("broker restart (stop_app/start_app)", "broker-restarts"),
        /** The whole broker node stopped and started again. */
        BROKER_NODE_RESTART("broker node restart", "broker-node-restarts"),
        KILL_RELAY("kill -9 outbox-relay", "kills"),
        KILL_INVENTORY("kill -9 inventory-service", "kills"),
        KILL_ORDER_SERVICE("kill -9 order-service", "kills"),
        /** The second relay instance, which carries inventory's replies back to order-service. */
        KILL_REPLY_RELAY("kill -9 outbox-relay-inventory", "kills"),
        POSTGRES_RESTART("PostgreSQL restart", "postgres-restarts"),
        /** The relay starts while the broker is down, and must wait for it. */
        BROKER_DOWN_WHILE_RELAY_STARTS("broker down while outbox-relay starts", "broker-down-while-relay-starts"),
        /** Malformed messages published straight to the orders exchange: they must end in the dead-letter queue. */
        POISON("poison messages published", "poison"),
        /** Delivered events published again, as a replay would: the inbox must absorb them. */
        REPUBLISH("delivered events republished", "republish"),
        /** The reset runbook done mid-load: relay killed, its slot dropped, made again later, relay started. */
        SLOT_RECREATED("relay slot dropped and re-created", "slot-recreations"),
        /** A relay deployed afresh (no slot, no offsets) after orders were placed. */
        RELAY_FRESH_START("relay started fresh (no slot, no offsets) after orders", "relay-fresh-starts"),
        /** Another tool's pg_logical_emit_message in the orders database. */
        FOREIGN_LOGICAL_MESSAGE("foreign logical message in the orders WAL", "foreign-messages"),
        /** inventory's sessions turned read-only for 10-20 s: every write fails with 25006. */
        INVENTORY_DB_READ_ONLY("inventory database refuses writes (read-only)", "inventory-db-refusals"),
        /** inventory's database takes no connections for 60 s while orders keep coming. */
        INVENTORY_DB_DOWN("inventory database down for 60 s", "inventory-db-outages"),
        /** The inventory queue's binding removed for 10 s: the relay parks, then republishes on request. */
        BINDING_REMOVED("inventory queue unbound for 10 s", "binding-removals"),
        /** A second inventory-service joins, takes its share of the partitions, consumes, and is killed. */
        SECOND_INVENTORY("second inventory-service joins, then kill -9", "second-inventory"),
        /** A second inventory-service joins and takes its share; later it is stopped (SIGTERM) and hands it back. */
        CONSUMER_SCALING("second inventory-service joins, then is stopped (scale 1 → 2 → 1)", "consumer-scaling"),
        /** Two inventory-service instances, each reading its partitions, killed at once; one comes back. */
        KILL_TWO_CONSUMERS("two inventory-service instances killed at once", "double-kills"),
        /**
         * A standby outbox-relay joins; the leader is killed and the standby takes over; the leader comes
         * back as standby and the standby, leading now, is killed: the slot changes hands twice.
         */
        RELAY_TAKEOVER("standby outbox-relay takes over from a killed leader, and back", "relay-takeovers"),
        /**
         * The leading outbox-relay frozen (SIGSTOP) past its lease while a standby waits: the standby must
         * take over; the frozen one is woken (SIGCONT) lease + 10 s later and must step down.
         */
        RELAY_FREEZE("leading outbox-relay frozen past its lease, then woken", "relay-freezes"),
        /** The leader's lock session ended (pg_terminate_backend) while its replication connection lives. */
        RELAY_SESSION_ENDED("leading outbox-relay's lock session ended, its stream alive", "relay-session-ends"),
        /**
         * A node lost without closing its sockets: an inventory-service instance frozen (SIGSTOP) while its
         * batch waits on a product row, never woken until the end of the run; the other must apply everything.
         */
        INVENTORY_FROZEN_MID_TRANSACTION("inventory-service instance frozen mid-transaction, never woken", "inventory-freezes"),
        /** A second inventory-service stopped (SIGTERM) while its batch waits 15 s on a product row lock. */
        SLOW_STOP("inventory-service instance stopped while its database is slow", "slow-stops"),
        /** PostgreSQL restarted with a standby relay and a second inventory-service running. */
        POSTGRES_RESTART_WITH_STANDBYS("PostgreSQL restart with two instances of each service", "postgres-restarts-with-standbys"),
        /** Outbox rows for an exchange the relay's broker user may not configure: they must park, the rest flow. */
        REFUSED_EXCHANGE("outbox rows for an exchange the broker refuses", "refused-exchanges"),
        /** inventory-service restarted while its broker user may not configure: it fails to start for a while. */
        DECLARATION_FAILURE("inventory-service cannot declare its topology for a while", "declaration-failures"),

        // A rolling deploy's steps (--rolling-deploy, RollingDeploy): at fixed points of the load, not counted.
        /** order-service stopped (SIGTERM) and started writing OrderCreated v2 (it wrote v1). */
        UPGRADE_ORDER_SERVICE("upgrade: order-service writes OrderCreated v2", null),
        /** The first inventory-service stopped (SIGTERM) and started reading v1 and v2 (it read v1 only). */
        UPGRADE_INVENTORY("upgrade: inventory-service reads OrderCreated v1 and v2", null),
        /** The second inventory-service likewise, one instance at a time. */
        UPGRADE_SECOND_INVENTORY("upgrade: inventory-service-2 reads OrderCreated v1 and v2", null),
        /** The v1 dead letters made before the upgrade, their cause fixed, sent back: the upgraded consumers read them. */
        REDELIVER_V1_DEAD_LETTERS("dead letters of OrderCreated v1 redelivered after the upgrade", null);

        final String description;
        /** The chaos run's option that says how many times (kills: of each service); null for a rolling deploy's step. */
        final String option;

        Fault(String description, String option) {
            this.description = description;
            this.option = option;
        }
    }

    record Step(long atMillis, Fault fault, long outageMillis) {
    }

    /** @param counts how many times each fault, by its {@link Fault#option} */
    static Schedule of(Map<String, Integer> counts, long loadMillis, long seed) {
        List<Fault> faults = new ArrayList<>();
        for (Fault fault : Fault.values()) {
            if (fault.option != null) {
                add(faults, fault, counts.getOrDefault(fault.option, 0));
            }
        }
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

    /** This schedule with steps at fixed points (a rolling deploy's) among its faults, in time order. */
    Schedule with(List<Step> fixed) {
        List<Step> all = new ArrayList<>(steps);
        all.addAll(fixed);
        all.sort(java.util.Comparator.comparingLong(Step::atMillis));
        return new Schedule(List.copyOf(all));
    }

    private static void add(List<Fault> faults, Fault fault, int times) {
        for (int i = 0; i < times; i++) {
            faults.add(fault);
        }
    }
}
