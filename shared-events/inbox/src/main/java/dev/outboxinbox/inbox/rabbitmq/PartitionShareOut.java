package dev.outboxinbox.inbox.rabbitmq;

import dev.outboxinbox.inbox.ChannelSettings;
import dev.outboxinbox.inbox.InboxSink;
import io.quarkus.logging.Log;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.microprofile.config.Config;

/**
 * The share-out of one stream's partitions among the instances of its consumer, kept by the
 * supervisor's thread every heartbeat: {@link PartitionAssignment} decides and locks; this subscribes
 * the session to the partitions this instance is given and gives the others up, each once what was in
 * hand from it is applied and acked. Used by the supervisor thread alone.
 */
final class PartitionShareOut {

    private final InboxConsumer consumer;
    private final ChannelSettings settings;
    private final PartitionAssignment partitions;
    private final AtomicReference<String> partitionProblem = new AtomicReference<>();
    private volatile String partitionsRead = "";
    /** When the lock session failed (System.nanoTime()), while it has not come back. */
    private Long lostSince;

    PartitionShareOut(InboxConsumer consumer, Config datasource) {
        this.consumer = consumer;
        this.settings = consumer.settings;
        this.partitions = new PartitionAssignment(settings, datasource);
    }

    /** At start: refuses a name another running instance of this consumer already has. */
    void refuseTakenName() {
        partitions.refuseTakenName();
    }

    /** This instance's name among the others. */
    String instance() {
        return partitions.instance();
    }

    /** Which partitions this instance reads, of how many, among which instances. */
    String read() {
        return partitionsRead;
    }

    /** null while the share-out works; else why not. */
    String problem() {
        return partitionProblem.get();
    }

    /** The connection is gone: without it this instance reads nothing, and its partitions go to the others. */
    void connectionLost() {
        givePartitionsUp();
        lostSince = null;
    }

    /**
     * One heartbeat of the share-out: give up the partitions another instance should read (each once
     * drained), take the free ones this instance should.
     *
     * <p>When the lock session fails (a database restart, a terminated session), its locks go with it,
     * but this instance keeps reading what it read, for up to the lease: single active consumer keeps
     * any instance that takes one of those locks meanwhile waiting on the queue, and once the session
     * is back this one takes each lock again or, when another holds it, closes that channel at once
     * (what it had in hand goes back to the queue's head, ahead of the rest, for the new reader; a copy
     * whose first transaction is still running waits on its inbox row and is a duplicate once that
     * commits). A blip costs no redelivery; a session gone longer than the lease means this instance
     * lost its database, and it lets every partition go so that the others read them.
     */
    void rebalance(ConsumerSession current) {
        try {
            PartitionAssignment.Plan plan = partitions.plan(applying());
            if (lostSince != null) {
                reclaim(current);
                plan = partitions.plan(applying());
                lostSince = null;
            }
            for (int partition : plan.release()) {
                current.unsubscribe(settings.partitionQueue(partition), partitions.drainTimeout());
                partitions.unlock(partition);
            }
            for (int partition : plan.acquire()) {
                // Not while another instance still consumes it (draining, or frozen until the broker drops it):
                // taking it then would only queue this one behind, and hand it back on the next change.
                if (!current.consumed(settings.partitionQueue(partition)) && partitions.tryLock(partition)) {
                    current.subscribe(settings.partitionQueue(partition));
                }
            }
            partitionProblem.set(null);
            describePartitions(plan.members());
        } catch (IOException e) {
            current.fail("cannot subscribe to a partition: " + BrokerErrors.describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            partitions.lost();
            if (lostSince == null) {
                lostSince = System.nanoTime();
                Log.warnf("Partitions: %s; reading on for up to %s while the session comes back", e.getMessage(), partitions.lease());
            }
            boolean pastLease = System.nanoTime() - lostSince > partitions.lease().toNanos();
            partitionProblem.set("cannot share the partitions out through the database" + (pastLease ? " (partitions given up)" : "")
                    + ": " + e.getMessage());
            if (pastLease && current.reading()) {
                Log.errorf("Partitions: no session for longer than the lease (%s): every partition is given up to the others",
                        partitions.lease());
                current.unsubscribeAll();
                describePartitions(List.of());
            }
        }
    }

    /**
     * Stopping (deliveries cancelled, what is in hand being applied): the locks stay with this instance
     * until the session closes, after the drain, so that no other instance reads a partition while
     * earlier messages of it are still being applied here (PartitionAssignment#leave).
     */
    void keepLocksWhileDraining() {
        try {
            partitions.leave();
        } catch (Exception e) {
            Log.warnf("Partitions: while draining: %s", e.getMessage());
        }
    }

    /** Whether this instance can apply what it reads: not in an outage of its database (the sink's probe failed). */
    private boolean applying() {
        InboxSink current = consumer.sink();
        return current == null || !current.outage();
    }

    /** After a lost session: the lock of each partition still read, taken again, or the partition let go at once. */
    private void reclaim(ConsumerSession current) throws SQLException {
        for (int partition = 0; partition < partitions.count(); partition++) {
            String queue = settings.partitionQueue(partition);
            if (current.reads(queue) && !partitions.tryLock(partition)) {
                Log.warnf("Partitions: %s is another instance's now; letting it go", queue);
                current.drop(queue);
            }
        }
    }

    void givePartitionsUp() {
        partitions.lost();
        describePartitions(List.of());
    }

    private void describePartitions(List<String> members) {
        String read = partitions.owned().toString() + " of " + partitions.count() + ", instances " + members;
        if (!read.equals(partitionsRead)) {
            Log.infof("Partitions of %s: %s reads %s", settings.queue(), partitions.instance(), read);
            partitionsRead = read;
        }
    }

    /** One heartbeat's time: how often {@link #rebalance} runs. */
    Duration heartbeat() {
        return partitions.heartbeat();
    }
}
