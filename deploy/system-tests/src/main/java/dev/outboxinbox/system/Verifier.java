package dev.outboxinbox.system;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.Topology;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Checks a run against the databases and the broker, never against what the services say about
 * themselves. order-service's database is the truth of what was committed; inventory-service's
 * tables are the effects. It can fail, and its tests make it fail (VerifierTest):
 * <ul>
 *   <li><b>lost</b>: a committed order without an outcome, an acknowledged (201) order that does
 *       not exist, a committed order without its outbox event;</li>
 *   <li><b>duplicate effect</b>: an order whose reservations exceed its lines, a rejected order
 *       holding stock, a SKU reserved beyond the sum of its reserved orders;</li>
 *   <li><b>phantom</b>: an outcome or inbox entry without a committed order or event, or a request
 *       that definitely failed (4xx, never connected) and committed anyway;</li>
 *   <li><b>duplicate effect</b> on the producer side too: a committed order that no request's
 *       Idempotency-Key leads to (a request committed twice);</li>
 *   <li>an outcome decided by another order's event;</li>
 *   <li>the dead-letter queue holding anything but the poison that was injected, a dead letter
 *       without the service's reason, or one the broker dead-lettered for its delivery limit;</li>
 *   <li>the replies: an order inventory decided that order-service never confirmed or rejected
 *       (lost), an order-service status that disagrees with inventory's, an inventory decision with
 *       no reply or with more than one (a duplicate effect), an order decided by a message that is
 *       not inventory's reply to it (phantom), any reply in order-service's dead-letter queue;</li>
 *   <li>the cancellations: a cancel order-service took (cancel_requested_at) has one OrderCancelled
 *       event, one cancellation in inventory applied by that event, one InventoryReleased reply, and
 *       ends CANCELLED by that reply; an acknowledged cancel was taken, a 409 only answers an order
 *       inventory rejected, a cancel that failed definitely was not taken, an unknown one may go either
 *       way but inventory and order-service agree; a cancellation without a request, a release without
 *       a cancellation, or a release of what an order never reserved is a phantom; a cancelled order
 *       released exactly what it reserved (less: lost, more: a duplicate effect);</li>
 *   <li><b>reordered</b>: an order's OrderCancelled applied before its OrderCreated (inventory's
 *       tombstone, outcome CANCELLED_FIRST), or order-service taking inventory's decision after the
 *       order's release;</li>
 *   <li>stock conservation: each SKU's reserved stock is what its live orders (reserved, not
 *       cancelled) ordered; on hand is what it was before the run ({@link Expected#initialOnHand()});</li>
 *   <li>the relay's parking queue: exactly the events the run made unpublishable
 *       ({@link Expected#refusedEvents()}), none of them with an effect anywhere; any other parked
 *       event never reached its consumer (lost);</li>
 *   <li>no convergence within the bound: both queues drained (nothing ready, nothing unacknowledged),
 *       every committed order decided in inventory and in order-service, nothing CANCELLING, every
 *       OrderCancelled applied in inventory, every refused event parked, both relays' slots
 *       confirmed past the end of the load.</li>
 * </ul>
 * A chaos run: {@link #onHand()} before the load; after it, {@link Expected} with the poison, the refused
 * event ids and that stock, then {@link #awaitConvergence(String, Expected, Duration, Consumer)} and
 * {@link #verify(List, Expected, Long, Settling, Duration)}.
 */
public final class Verifier {

    private static final int EXAMPLES = 10;
    /** RabbitMQ's management statistics (unacked counts) are refreshed every 5 s by default. */
    private static final long STATS_REFRESH_MILLIS = 6_000;

    static final String ORDER_CREATED = "OrderCreated";
    static final String ORDER_CANCELLED = "OrderCancelled";
    static final String INVENTORY_RESERVED = "InventoryReserved";
    static final String INVENTORY_REJECTED = "InventoryRejected";
    static final String INVENTORY_RELEASED = "InventoryReleased";
    /** inventory's tombstone: the order's cancellation arrived before its OrderCreated, a reordering. */
    static final String CANCELLED_FIRST = "CANCELLED_FIRST";

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final Pattern UNACKED = Pattern.compile("\"messages_unacknowledged\":(\\d+)");

    private final SystemUnderTest system;

    public Verifier(SystemUnderTest system) {
        this.system = system;
    }

    /**
     * What the run expects to find beside the orders' own effects. Build it after the load, when the
     * faults have recorded what they injected (the sets are copied).
     *
     * @param poison        message ids published as poison: exactly these belong in inventory's dead-letter queue
     * @param refusedEvents outbox event ids the run made unpublishable (written for an exchange the broker
     *                      refuses): exactly these belong in the relay's parking queue, and none may take effect
     * @param initialOnHand each SKU's products.on_hand read before the load ({@link #onHand()}); on hand never
     *                      changes, so stock is conserved when it still holds these figures. Null: not compared.
     */
    public record Expected(Set<String> poison, Set<String> refusedEvents, Map<String, Integer> initialOnHand) {

        public Expected {
            poison = Set.copyOf(poison);
            refusedEvents = Set.copyOf(refusedEvents);
            initialOnHand = initialOnHand == null ? null : Map.copyOf(initialOnHand);
        }

        /** Only poison injected: nothing refused, on hand not compared. */
        public static Expected poison(Set<String> poison) {
            return new Expected(poison, Set.of(), null);
        }
    }

    /** Where the WAL is now: once the relay's slot confirmed past it, every event written before was delivered. */
    public String walPosition() {
        try (var c = system.orders().connect(); Statement sql = c.createStatement();
             ResultSet rs = sql.executeQuery("SELECT pg_current_wal_lsn()::text")) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot read the WAL position from " + system.orders(), e);
        }
    }

    /** Each SKU's stock on hand now: read it before the load, and pass it in {@link Expected#initialOnHand()}. */
    public Map<String, Integer> onHand() {
        try {
            Map<String, Integer> onHand = new TreeMap<>();
            query(system.inventory(), "SELECT sku, on_hand FROM products", rs -> onHand.put(rs.getString(1), rs.getInt(2)));
            return onHand;
        } catch (SQLException e) {
            throw new IllegalStateException("Cannot read the stock on hand from " + system.inventory(), e);
        }
    }

    /**
     * A cheap look at how far delivery has come.
     * @param cancelling             orders order-service still has as CANCELLING (its cancel not yet answered by inventory's release)
     * @param cancellationsUnapplied OrderCancelled events in order-service's outbox that inventory has no cancellation for
     * @param parked                 messages in the relay's parking queue (refused or unroutable events)
     */
    public record Convergence(int committed, int undecided, long queued, long unacked, long deadLetters, boolean slotCaughtUp,
                              int pending, long repliesQueued, long repliesUnacked, long replyDeadLetters, boolean replySlotCaughtUp,
                              int cancelling, int cancellationsUnapplied, long parked) {

        /** Drained means nothing ready and nothing unacknowledged: a message in a consumer's hands is not done. */
        boolean settled(long expectedDeadLetters) {
            return settled(expectedDeadLetters, 0);
        }

        /**
         * And every refused event parked: at least as many as were refused (a relay's recovery republishes
         * the outbox, which parks a refused event again; {@link #verify} compares the ids).
         */
        boolean settled(long expectedDeadLetters, long expectedParked) {
            return undecided == 0 && queued == 0 && unacked == 0 && deadLetters == expectedDeadLetters && slotCaughtUp
                    && pending == 0 && repliesQueued == 0 && repliesUnacked == 0 && replyDeadLetters == 0 && replySlotCaughtUp
                    && cancelling == 0 && cancellationsUnapplied == 0 && parked >= expectedParked;
        }

        /** Every order decided and every cancel applied, in inventory and in order-service, nothing waiting in either queue. */
        boolean delivered() {
            return undecided == 0 && queued == 0 && pending == 0 && repliesQueued == 0 && cancelling == 0 && cancellationsUnapplied == 0;
        }

        @Override
        public String toString() {
            return ("%d committed, %d undecided, %d queued, %d unacked, %d dead letters, slot %s;"
                    + " replies: %d orders pending, %d queued, %d unacked, %d dead letters, slot %s;"
                    + " cancels: %d orders cancelling, %d not applied in inventory; %d parked")
                    .formatted(committed, undecided, queued, unacked, deadLetters, slotCaughtUp ? "caught up" : "behind",
                            pending, repliesQueued, repliesUnacked, replyDeadLetters, replySlotCaughtUp ? "caught up" : "behind",
                            cancelling, cancellationsUnapplied, parked);
        }
    }

    public Convergence convergence(String walTarget) throws Exception {
        Set<UUID> undecided = uuids(system.orders(), "SELECT id FROM orders");
        int committed = undecided.size();
        undecided.removeAll(uuids(system.inventory(), "SELECT order_id FROM order_outcomes"));
        int pending = uuids(system.orders(), "SELECT id FROM orders WHERE status = 'PENDING'").size();
        int cancelling = uuids(system.orders(), "SELECT id FROM orders WHERE status = 'CANCELLING'").size();
        Set<String> unapplied = new HashSet<>();
        query(system.orders(), "SELECT aggregateid FROM outbox WHERE type = '" + ORDER_CANCELLED + "'", rs -> unapplied.add(rs.getString(1)));
        query(system.inventory(), "SELECT order_id::text FROM cancellations", rs -> unapplied.remove(rs.getString(1)));
        long[] depth = queueDepths();
        return new Convergence(committed, undecided.size(), depth[0], inventoryUnacked(), depth[1],
                slotConfirmedPast(system.relaySlot(), walTarget),
                pending, depth[2], unacked(Topology.ORDER_REPLIES_QUEUE), depth[3], slotConfirmedPast(system.replyRelaySlot(), walTarget),
                cancelling, unapplied.size(), parkedCount());
    }

    /**
     * How long delivery took after the load: until every committed order was decided and the
     * queue was empty, and until everything settled (dead letters in place, the relay's slot
     * confirmed past the end of the load, which may wait for the relay's next heartbeat). -1: not within the bound.
     */
    public record Settling(long deliveredMillis, long settledMillis) {
    }

    /** Waits until everything written before {@code walTarget} has been delivered and settled. */
    public Settling awaitConvergence(String walTarget, long expectedDeadLetters, Duration bound, Consumer<String> progress) {
        return awaitConvergence(walTarget, new Expected(Set.of(), Set.of(), null), expectedDeadLetters, bound, progress);
    }

    /** Waits until everything written before {@code walTarget} has been delivered and settled, the poison and refused events parked. */
    public Settling awaitConvergence(String walTarget, Expected expected, Duration bound, Consumer<String> progress) {
        return awaitConvergence(walTarget, expected, expected.poison().size(), bound, progress);
    }

    private Settling awaitConvergence(String walTarget, Expected expected, long expectedDeadLetters, Duration bound,
                                      Consumer<String> progress) {
        long start = System.nanoTime();
        long lastReport = 0;
        long delivered = -1;
        long settledSince = -1;
        String last = "nothing read yet";
        while (true) {
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            try {
                Convergence state = convergence(walTarget);
                last = state.toString();
                if (delivered < 0 && state.delivered()) {
                    delivered = elapsed;
                }
                if (!state.settled(expectedDeadLetters, expected.refusedEvents().size())) {
                    settledSince = -1;
                } else if (settledSince < 0) {
                    settledSince = elapsed;
                } else if (elapsed - settledSince >= STATS_REFRESH_MILLIS) {
                    // Held for longer than the broker takes to refresh its unacked count: not a stale zero.
                    progress.accept("converged after " + settledSince + " ms (all decided after " + delivered + " ms): " + state);
                    return new Settling(delivered, settledSince);
                }
            } catch (Exception e) {
                last = "cannot read the state: " + e.getMessage(); // a database or the broker may still be restarting
            }
            if (elapsed > bound.toMillis()) {
                progress.accept("NOT converged within " + bound.toMillis() + " ms: " + last);
                return new Settling(delivered, -1);
            }
            if (elapsed - lastReport >= 5_000) {
                lastReport = elapsed;
                progress.accept("draining (" + elapsed / 1000 + " s): " + last);
            }
            LockSupport.parkNanos(Duration.ofMillis(500).toNanos());
        }
    }

    /** The full check with only poison expected: nothing refused, on hand not compared. */
    public VerificationReport verify(List<OrderLoad.Request> requests, Set<String> injectedPoison, Long duplicatesAbsorbed,
                                     Settling settling, Duration bound) throws Exception {
        return verify(requests, Expected.poison(injectedPoison), duplicatesAbsorbed, settling, bound);
    }

    /**
     * The full check.
     * @param requests           what the load generator recorded (empty if orders came from elsewhere)
     * @param expected           the poison and refused events the run injected, and the stock on hand before it
     * @param duplicatesAbsorbed deliveries the inbox recognised as duplicates, if known
     * @param settling           from {@link #awaitConvergence}
     */
    public VerificationReport verify(List<OrderLoad.Request> requests, Expected expected, Long duplicatesAbsorbed,
                                     Settling settling, Duration bound) throws Exception {
        Violations violations = new Violations();
        Set<String> injectedPoison = expected.poison();

        // The truth: what order-service committed.
        Set<UUID> committed = uuids(system.orders(), "SELECT id FROM orders");
        Map<UUID, Map<String, Integer>> lines = quantities(system.orders(), "SELECT order_id, sku, quantity FROM order_lines");
        Map<String, UUID> keys = new HashMap<>();
        query(system.orders(), "SELECT idempotency_key, order_id FROM idempotency_keys",
                rs -> keys.put(rs.getString(1), rs.getObject(2, UUID.class)));
        // Every event in the outbox: the orders' (OrderCreated, OrderCancelled) and any the run wrote for a refused exchange,
        // whose aggregate id need not be an order's.
        Map<String, UUID> outbox = new HashMap<>();
        Map<String, String> eventTypes = new HashMap<>();
        Map<UUID, List<String>> cancelEvents = new HashMap<>();
        query(system.orders(), "SELECT id::text, aggregateid, type FROM outbox", rs -> {
            UUID aggregate = uuidOrNull(rs.getString(2));
            outbox.put(rs.getString(1), aggregate);
            eventTypes.put(rs.getString(1), rs.getString(3));
            if (ORDER_CANCELLED.equals(rs.getString(3))) {
                cancelEvents.computeIfAbsent(aggregate, o -> new ArrayList<>()).add(rs.getString(1));
            }
        });

        // The effects: what inventory-service did.
        Map<UUID, String> outcomes = new HashMap<>();
        Map<UUID, String> outcomeMessages = new HashMap<>();
        query(system.inventory(), "SELECT order_id, status, message_id FROM order_outcomes", rs -> {
            outcomes.put(rs.getObject(1, UUID.class), rs.getString(2));
            outcomeMessages.put(rs.getObject(1, UUID.class), rs.getString(3));
        });
        Map<UUID, Map<String, Integer>> reservations = quantities(system.inventory(), "SELECT order_id, sku, quantity FROM reservations");
        Map<UUID, Map<String, Integer>> releases = quantities(system.inventory(), "SELECT order_id, sku, quantity FROM releases");
        Map<UUID, String> cancellations = new HashMap<>();
        query(system.inventory(), "SELECT order_id, message_id FROM cancellations",
                rs -> cancellations.put(rs.getObject(1, UUID.class), rs.getString(2)));
        Map<String, Integer> reservedBySku = new TreeMap<>();
        Map<String, Integer> onHandBySku = new TreeMap<>();
        query(system.inventory(), "SELECT sku, reserved, on_hand FROM products", rs -> {
            reservedBySku.put(rs.getString(1), rs.getInt(2));
            onHandBySku.put(rs.getString(1), rs.getInt(3));
        });
        Set<String> inbox = new HashSet<>();
        query(system.inventory(), "SELECT message_id FROM inbox", rs -> inbox.add(rs.getString(1)));
        List<DeadLetter> deadLetters = deadLetters(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        List<String> deadLetterIds = deadLetters.stream().map(DeadLetter::messageId).toList();

        // The replies: what inventory told order-service, and what order-service made of it.
        Map<UUID, String> statuses = new HashMap<>();
        Map<UUID, String> decidedBy = new HashMap<>();
        Map<UUID, String> cancelledBy = new HashMap<>();
        Set<UUID> cancelRequested = new HashSet<>();
        Set<UUID> decidedAfterRelease = new HashSet<>();
        query(system.orders(), "SELECT id, status, decided_by, cancel_requested_at IS NOT NULL, cancelled_by,"
                + " decided_at > cancelled_at FROM orders", rs -> {
            UUID order = rs.getObject(1, UUID.class);
            statuses.put(order, rs.getString(2));
            decidedBy.put(order, rs.getString(3));
            if (rs.getBoolean(4)) {
                cancelRequested.add(order);
            }
            cancelledBy.put(order, rs.getString(5));
            if (rs.getBoolean(6)) { // null (not both taken) reads as false
                decidedAfterRelease.add(order);
            }
        });
        Map<String, UUID> replies = new HashMap<>();
        Map<String, String> replyTypes = new HashMap<>();
        Map<UUID, List<String>> decisionReplies = new HashMap<>();
        Map<UUID, Integer> releaseReplies = new HashMap<>();
        query(system.inventory(), "SELECT id::text, aggregateid, type FROM outbox", rs -> {
            UUID order = uuidOrNull(rs.getString(2));
            replies.put(rs.getString(1), order);
            replyTypes.put(rs.getString(1), rs.getString(3));
            if (INVENTORY_RELEASED.equals(rs.getString(3))) {
                releaseReplies.merge(order, 1, Integer::sum);
            } else {
                decisionReplies.computeIfAbsent(order, o -> new ArrayList<>()).add(rs.getString(1));
            }
        });
        Set<String> replyInbox = new HashSet<>();
        query(system.orders(), "SELECT message_id FROM inbox WHERE consumer = 'order-service'", rs -> replyInbox.add(rs.getString(1)));
        List<DeadLetter> replyDeadLetters = deadLetters(Topology.ORDER_DEAD_LETTER_QUEUE);
        List<DeadLetter> parkedEvents = deadLetters(Topology.RELAY_PARKING_QUEUE);

        // Requests: an acknowledged order exists; a definite failure wrote nothing.
        Map<String, Long> byResult = new TreeMap<>();
        Map<String, Long> cancelsByResult = new TreeMap<>();
        Set<UUID> cancelSent = new HashSet<>();
        for (OrderLoad.Request request : requests) {
            byResult.merge(request.result().name(), 1L, Long::sum);
            if (request.result() == OrderLoad.Result.OK && !committed.contains(request.orderId())) {
                violations.lost("acknowledged order does not exist", request.orderId());
            }
            if (request.result() == OrderLoad.Result.OK && !request.orderId().equals(keys.get(request.idempotencyKey()))) {
                violations.other("Idempotency-Key " + request.idempotencyKey() + " does not lead to the acknowledged order");
            }
            if (request.result() == OrderLoad.Result.FAILED && keys.containsKey(request.idempotencyKey())) {
                violations.phantom("request failed definitely but committed", request.idempotencyKey());
            }
            if (request.cancel() != null && request.orderId() != null) {
                cancelsByResult.merge(request.cancel().result().name(), 1L, Long::sum);
                cancelSent.add(request.orderId());
                checkCancelRequest(request, statuses, outcomes, cancelRequested, violations);
            }
        }

        // Requests: each committed order is the one order of one request (every request of a load sends
        // an Idempotency-Key); an order no key leads to is a request that committed twice.
        if (!requests.isEmpty()) {
            Set<UUID> keyed = new HashSet<>(keys.values());
            for (UUID order : committed) {
                if (!keyed.contains(order)) {
                    violations.duplicateEffect("committed order no Idempotency-Key leads to (a request committed twice?)", order);
                }
            }
            for (UUID order : cancelRequested) {
                if (!cancelSent.contains(order)) {
                    violations.phantom("order cancelled in order-service that the client never asked to cancel", order);
                }
            }
        }

        // Source: every committed order has its event, in the same transaction; a cancel request its OrderCancelled, once.
        Set<UUID> withEvent = new HashSet<>(outbox.values());
        for (UUID order : committed) {
            if (!withEvent.contains(order)) {
                violations.lost("committed order has no outbox event", order);
            }
        }
        for (UUID order : cancelRequested) {
            int events = cancelEvents.getOrDefault(order, List.of()).size();
            if (events == 0) {
                violations.lost("cancel requested in order-service without its OrderCancelled event", order);
            } else if (events > 1) {
                violations.duplicateEffect("more than one OrderCancelled event for an order", order + ": " + events + " events");
            }
        }
        for (UUID order : cancelEvents.keySet()) {
            if (!cancelRequested.contains(order)) {
                violations.phantom("OrderCancelled event for an order with no cancel request", order);
            }
        }

        // Delivery: every committed order decided; nothing decided that was not committed.
        for (UUID order : committed) {
            if (!outcomes.containsKey(order)) {
                violations.lost("committed order has no outcome in inventory", order);
            }
        }
        for (Map.Entry<UUID, String> outcome : outcomes.entrySet()) {
            UUID order = outcome.getKey();
            String message = outcomeMessages.get(order);
            if (!committed.contains(order)) {
                violations.phantom("outcome for an order that was never committed", order);
            } else if (!outbox.containsKey(message)) {
                violations.phantom("outcome decided by a message that is not an outbox event", order);
            } else if (!order.equals(outbox.get(message))) {
                violations.phantom("outcome decided by another order's event", order + " by " + message);
            } else if (!eventTypes.get(message).equals(CANCELLED_FIRST.equals(outcome.getValue()) ? ORDER_CANCELLED : ORDER_CREATED)) {
                violations.phantom("outcome decided by an event of another type", order + " " + outcome.getValue() + " by its "
                        + eventTypes.get(message));
            }
            if (CANCELLED_FIRST.equals(outcome.getValue())) {
                violations.reordered("the cancellation reached inventory before the order's OrderCreated (outcome CANCELLED_FIRST)", order);
            }
        }
        for (String messageId : inbox) {
            if (!outbox.containsKey(messageId)) {
                violations.phantom("inbox holds a message id that is not an outbox event", messageId);
            }
        }

        // Replies: inventory's decision reaches order-service once, and order-service agrees with it.
        for (Map.Entry<UUID, String> outcome : outcomes.entrySet()) {
            UUID order = outcome.getKey();
            if (!committed.contains(order)) {
                continue; // a phantom already
            }
            boolean tombstone = CANCELLED_FIRST.equals(outcome.getValue());
            List<String> sent = decisionReplies.getOrDefault(order, List.of());
            if (sent.isEmpty() && !tombstone) {
                violations.lost("inventory decided an order without replying", order);
            } else if (sent.size() > 1) {
                violations.duplicateEffect("inventory replied more than once for an order", order + ": " + sent.size() + " replies");
            }
            String status = statuses.get(order);
            if ("PENDING".equals(status)) {
                violations.lost("inventory decided, order-service still PENDING (the reply did not arrive)", order);
            } else if ("CANCELLING".equals(status) || "CANCELLED".equals(status)) {
                // The cancellation's checks below; its decision reply must still have been taken into account,
                // and before the release: inventory replied in that order, one partition, one reply queue.
                if (!tombstone && !sent.isEmpty() && decidedBy.get(order) == null) {
                    if (sent.stream().anyMatch(replyInbox::contains)) {
                        violations.other("order-service took inventory's decision for a cancelled order without recording it: " + order);
                    } else {
                        violations.lost("order-service never took inventory's decision for a cancelled order", order);
                    }
                } else if (decidedAfterRelease.contains(order)) {
                    violations.reordered("order-service took inventory's decision after the order's release (the replies out of order)",
                            order);
                }
            } else if (tombstone || !status.equals("RESERVED".equals(outcome.getValue()) ? "CONFIRMED" : "REJECTED")) {
                violations.other("order-service says " + status + ", inventory " + outcome.getValue() + ": " + order);
            }
        }
        for (Map.Entry<UUID, String> decided : decidedBy.entrySet()) {
            UUID order = decided.getKey();
            String reply = decided.getValue();
            if (reply == null) {
                continue;
            }
            String type = replyTypes.get(reply);
            String status = statuses.get(order);
            if (!order.equals(replies.get(reply)) || INVENTORY_RELEASED.equals(type)) {
                violations.phantom("order decided by a message that is not inventory's reply to it", order + " by " + reply);
            } else if (("CONFIRMED".equals(status) || "REJECTED".equals(status))
                    && !status.equals(INVENTORY_RESERVED.equals(type) ? "CONFIRMED" : "REJECTED")) {
                violations.other("order " + order + " is " + status + " by a " + type);
            }
        }
        for (String messageId : replyInbox) {
            if (!replies.containsKey(messageId)) {
                violations.phantom("order-service's inbox holds a message id that is not an inventory reply", messageId);
            }
        }
        for (DeadLetter letter : replyDeadLetters) {
            violations.other("a reply was dead-lettered: " + letter.messageId() + " (" + letter.reason() + ")");
        }

        // Cancellations: each cancel requested in order-service applied once in inventory (by that order's own
        // OrderCancelled), answered by one InventoryReleased, and CANCELLED in order-service by that reply.
        for (UUID order : cancelRequested) {
            String status = statuses.get(order);
            if (!cancellations.containsKey(order)) {
                violations.lost("cancel requested in order-service, no cancellation in inventory", order);
            }
            if ("CANCELLING".equals(status)) {
                violations.lost("order still CANCELLING (inventory's release never reached order-service)", order);
            } else if (!"CANCELLED".equals(status)) {
                violations.other("cancel requested, order-service says " + status + ": " + order);
            }
        }
        for (Map.Entry<UUID, String> cancellation : cancellations.entrySet()) {
            UUID order = cancellation.getKey();
            String message = cancellation.getValue();
            if (!committed.contains(order)) {
                violations.phantom("cancellation for an order that was never committed", order);
                continue;
            }
            if (!cancelRequested.contains(order)) {
                violations.phantom("cancellation in inventory without a cancel request in order-service", order);
            }
            if (!order.equals(outbox.get(message)) || !ORDER_CANCELLED.equals(eventTypes.get(message))) {
                violations.phantom("cancellation applied by a message that is not the order's OrderCancelled", order + " by " + message);
            }
            int released = releaseReplies.getOrDefault(order, 0);
            if (released == 0) {
                violations.lost("cancellation applied without an InventoryReleased reply", order);
            } else if (released > 1) {
                violations.duplicateEffect("inventory replied InventoryReleased more than once for an order", order + ": " + released + " replies");
            }
        }
        for (UUID order : releaseReplies.keySet()) {
            if (!cancellations.containsKey(order)) {
                violations.phantom("InventoryReleased reply without a cancellation in inventory", order);
            }
        }
        for (Map.Entry<UUID, String> entry : statuses.entrySet()) {
            UUID order = entry.getKey();
            String reply = cancelledBy.get(order);
            if ("CANCELLED".equals(entry.getValue()) && !cancellations.containsKey(order)) {
                violations.phantom("order-service says CANCELLED, inventory has no cancellation", order);
            }
            if ("CANCELLED".equals(entry.getValue()) && reply == null) {
                violations.other("order " + order + " is CANCELLED by no reply (cancelled_by is empty)");
            }
            if (reply != null && (!order.equals(replies.get(reply)) || !INVENTORY_RELEASED.equals(replyTypes.get(reply)))) {
                violations.phantom("order cancelled by a message that is not inventory's release of it", order + " by " + reply);
            } else if (reply != null && !"CANCELLED".equals(entry.getValue())) {
                violations.other("order " + order + " is " + entry.getValue() + " though InventoryReleased " + reply + " cancelled it");
            }
        }

        // Effects: each order's effect exactly once; a cancelled order released exactly what it reserved;
        // stock = what the live orders (reserved, not cancelled) add up to; on hand never changes.
        Map<String, Integer> expectedBySku = new TreeMap<>();
        Map<String, Integer> releasedBySku = new TreeMap<>();
        for (Map.Entry<UUID, String> outcome : outcomes.entrySet()) {
            UUID order = outcome.getKey();
            Map<String, Integer> held = reservations.getOrDefault(order, Map.of());
            Map<String, Integer> ordered = lines.getOrDefault(order, Map.of());
            Map<String, Integer> released = releases.getOrDefault(order, Map.of());
            released.forEach((sku, quantity) -> releasedBySku.merge(sku, quantity, Integer::sum));
            boolean cancelled = cancellations.containsKey(order);
            if ("RESERVED".equals(outcome.getValue())) {
                if (!cancelled) {
                    ordered.forEach((sku, quantity) -> expectedBySku.merge(sku, quantity, Integer::sum));
                }
                if (exceeds(held, ordered)) {
                    violations.duplicateEffect("order reserved more than it ordered", order + " holds " + held + ", ordered " + ordered);
                } else if (!held.equals(ordered)) {
                    violations.other("reserved order " + order + " holds " + held + ", ordered " + ordered);
                }
                if (!cancelled && !released.isEmpty()) {
                    violations.phantom("stock released for an order that was not cancelled", order + " released " + released);
                } else if (cancelled && exceeds(released, held)) {
                    violations.duplicateEffect("cancelled order released more than it reserved", order + " released " + released + ", reserved " + held);
                } else if (cancelled && !released.equals(held)) {
                    violations.lost("cancelled order did not release what it reserved", order + " released " + released + ", reserved " + held);
                }
            } else {
                if (!held.isEmpty()) {
                    violations.duplicateEffect(CANCELLED_FIRST.equals(outcome.getValue())
                            ? "order cancelled before it arrived holds stock" : "rejected order holds stock", order + " holds " + held);
                }
                if (!released.isEmpty()) {
                    violations.phantom("stock released for an order that reserved nothing", order + " (" + outcome.getValue()
                            + ") released " + released);
                }
            }
        }
        for (Map.Entry<UUID, Map<String, Integer>> release : releases.entrySet()) {
            if (!outcomes.containsKey(release.getKey())) {
                violations.phantom("stock released for an order inventory never decided", release.getKey() + " released " + release.getValue());
                release.getValue().forEach((sku, quantity) -> releasedBySku.merge(sku, quantity, Integer::sum));
            }
        }
        Map<String, VerificationReport.Stock> stock = new TreeMap<>();
        for (String sku : reservedBySku.keySet()) {
            int reserved = reservedBySku.get(sku);
            int live = expectedBySku.getOrDefault(sku, 0);
            Integer initial = expected.initialOnHand() == null ? null : expected.initialOnHand().get(sku);
            stock.put(sku, new VerificationReport.Stock(initial, onHandBySku.get(sku), reserved, live, releasedBySku.getOrDefault(sku, 0)));
            if (reserved > live) {
                violations.duplicateEffect("SKU reserved beyond its live orders", sku + ": " + reserved + " reserved, live orders add up to " + live);
            } else if (reserved < live) {
                violations.duplicateEffect("SKU reserved below its live orders (stock released twice?)",
                        sku + ": " + reserved + " reserved, live orders add up to " + live);
            }
        }
        if (expected.initialOnHand() != null) {
            for (Map.Entry<String, Integer> initial : expected.initialOnHand().entrySet()) {
                Integer now = onHandBySku.get(initial.getKey());
                if (!initial.getValue().equals(now)) {
                    violations.other("stock on hand of " + initial.getKey() + " changed: " + initial.getValue() + " before the run, "
                            + (now == null ? "no such product" : now) + " after");
                }
            }
            for (String sku : onHandBySku.keySet()) {
                if (!expected.initialOnHand().containsKey(sku)) {
                    violations.other("product " + sku + " appeared during the run");
                }
            }
        }

        // Dead letters: exactly the injected poison, each parked by the service with its reason, none by
        // the broker because a valid message went round too often.
        for (DeadLetter letter : deadLetters) {
            if (letter.deliveryLimit()) {
                violations.other("dead-lettered by the broker's delivery limit, not by the service: " + letter.messageId());
            } else if (!letter.hasReason()) {
                violations.other("dead letter without the service's reason: " + letter.messageId());
            }
        }
        // Dead letters: exactly the injected poison.
        Set<String> parked = new TreeSet<>(deadLetterIds);
        if (parked.size() != deadLetterIds.size()) {
            violations.other("a message was dead-lettered more than once: " + deadLetterIds.size() + " dead letters, "
                    + parked.size() + " distinct");
        }
        for (String id : parked) {
            if (!injectedPoison.contains(id)) {
                violations.other("dead-lettered but not injected as poison: " + id);
            }
        }
        for (String id : injectedPoison) {
            if (!parked.contains(id)) {
                violations.other("injected poison is not in the dead-letter queue: " + id);
            }
        }

        // The relay's parking queue: exactly the events the run made unpublishable (a refused one may be parked
        // more than once: a relay's recovery republishes the outbox), none of them with any effect. Any other
        // event parked there is lost if its consumer never had it, and a stale copy (one a republish would send
        // again) if it did.
        Set<String> parkedIds = new TreeSet<>();
        for (DeadLetter event : parkedEvents) {
            parkedIds.add(event.messageId());
        }
        Set<String> delivered = new HashSet<>(inbox);
        delivered.addAll(replyInbox);
        for (String id : parkedIds) {
            if (!expected.refusedEvents().contains(id)) {
                String described = id + (eventTypes.containsKey(id) ? " " + eventTypes.get(id) + " of " + outbox.get(id) : "")
                        + " (" + parkedEvents.stream().filter(e -> e.messageId().equals(id)).findFirst().map(DeadLetter::reason).orElse("") + ")";
                if (delivered.contains(id)) {
                    violations.other("an event delivered to its consumer is still parked by the relay (a stale copy): " + described);
                } else {
                    violations.lost("event parked by the relay that the run did not refuse (never delivered)", described);
                }
            }
        }
        Set<String> effects = new HashSet<>(delivered);
        effects.addAll(outcomeMessages.values());
        effects.addAll(cancellations.values());
        for (String id : new TreeSet<>(expected.refusedEvents())) {
            if (!parkedIds.contains(id)) {
                violations.other("refused event is not in the relay's parking queue: " + id);
            }
            if (effects.contains(id)) {
                violations.phantom("a refused event took effect", id);
            }
        }

        if (settling.settledMillis() < 0) {
            violations.other("did not converge within " + bound.toMillis() + " ms");
        }
        Map<String, Long> decided = new TreeMap<>();
        statuses.values().forEach(status -> decided.merge(status, 1L, Long::sum));
        Map<String, Long> byType = new TreeMap<>();
        eventTypes.values().forEach(type -> byType.merge(type, 1L, Long::sum));
        return new VerificationReport(byResult, committed.size(), outbox.size(), byType, inbox.size(), decided, replyInbox.size(),
                duplicatesAbsorbed, violations.duplicateEffects, violations.lost, violations.phantoms, violations.reordered,
                cancelsByResult, cancelRequested.size(), cancellations.size(), stock,
                deadLetterIds.size(), injectedPoison.size(), parkedIds.size(), expected.refusedEvents().size(),
                settling.deliveredMillis(), settling.settledMillis(), bound.toMillis(), null, violations.list());
    }

    /**
     * What the client was told about a cancel, against order-service's state: an acknowledged cancel was
     * taken; a 409 is only for an order inventory rejected; a definite no wrote nothing (and for an order that
     * exists, a 4xx other than 409 is itself wrong). An unknown one may go either way: the cancellation
     * checks hold it to "cancelled in inventory exactly when order-service took the cancel".
     */
    private static void checkCancelRequest(OrderLoad.Request request, Map<UUID, String> statuses, Map<UUID, String> outcomes,
                                           Set<UUID> cancelRequested, Violations violations) {
        UUID order = request.orderId();
        OrderLoad.Cancel cancel = request.cancel();
        switch (cancel.result()) {
            case ACKNOWLEDGED -> {
                if (!cancelRequested.contains(order)) {
                    violations.lost("acknowledged cancel not recorded in order-service", order + " (" + statuses.get(order) + ")");
                }
            }
            case REJECTED -> {
                if (cancelRequested.contains(order) || !"REJECTED".equals(statuses.get(order)) || !"REJECTED".equals(outcomes.get(order))) {
                    violations.other("cancel answered 409, yet order-service says " + statuses.get(order)
                            + (cancelRequested.contains(order) ? " (cancel requested)" : "") + ", inventory " + outcomes.get(order) + ": " + order);
                }
            }
            case FAILED -> {
                if (cancelRequested.contains(order)) {
                    violations.phantom("cancel failed definitely but was taken", order + " (" + cancel.detail() + ")");
                }
                if (!cancel.detail().startsWith("connection refused")) {
                    violations.other("cancel of an acknowledged order refused: " + order + " " + cancel.detail());
                }
            }
            case UNKNOWN -> {
                // Either way is right; what the system did with it is checked with every other cancellation.
            }
        }
    }

    private static boolean exceeds(Map<String, Integer> held, Map<String, Integer> ordered) {
        return held.entrySet().stream().anyMatch(e -> e.getValue() > ordered.getOrDefault(e.getKey(), 0));
    }

    /** Violations grouped by rule, each with a count and up to ten examples. */
    private static final class Violations {
        private final Map<String, List<Object>> examples = new LinkedHashMap<>();
        private final Map<String, Long> counts = new LinkedHashMap<>();
        long lost;
        long duplicateEffects;
        long phantoms;
        long reordered;

        void lost(String rule, Object example) {
            lost++;
            add("LOST: " + rule, example);
        }

        void duplicateEffect(String rule, Object example) {
            duplicateEffects++;
            add("DUPLICATE EFFECT: " + rule, example);
        }

        void phantom(String rule, Object example) {
            phantoms++;
            add("PHANTOM: " + rule, example);
        }

        void reordered(String rule, Object example) {
            reordered++;
            add("REORDERED: " + rule, example);
        }

        void other(String rule) {
            add(rule, null);
        }

        private void add(String rule, Object example) {
            counts.merge(rule, 1L, Long::sum);
            List<Object> list = examples.computeIfAbsent(rule, r -> new ArrayList<>());
            if (example != null && list.size() < EXAMPLES) {
                list.add(example);
            }
        }

        List<String> list() {
            return counts.entrySet().stream()
                    .map(e -> e.getKey() + (e.getValue() > 1 ? " × " + e.getValue() : "")
                            + (examples.get(e.getKey()).isEmpty() ? "" : ", e.g. " + examples.get(e.getKey())))
                    .collect(Collectors.toList());
        }
    }

    /** pg_replication_slots is the whole server's: one query sees the slots of both databases. */
    private boolean slotConfirmedPast(String slot, String walTarget) throws SQLException {
        try (var c = system.orders().connect();
             PreparedStatement query = c.prepareStatement(
                     "SELECT confirmed_flush_lsn >= ?::pg_lsn FROM pg_replication_slots WHERE slot_name = ?")) {
            query.setString(1, walTarget);
            query.setString(2, slot);
            try (ResultSet rs = query.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** Messages ready in the inventory partitions, their dead-letter queue, order-service's reply queue and its dead-letter queue. */
    private long[] queueDepths() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("verifier");
             Channel channel = connection.createChannel()) {
            return new long[] {
                    inventoryReady(channel),
                    channel.queueDeclarePassive(Topology.INVENTORY_DEAD_LETTER_QUEUE).getMessageCount(),
                    channel.queueDeclarePassive(Topology.ORDER_REPLIES_QUEUE).getMessageCount(),
                    channel.queueDeclarePassive(Topology.ORDER_DEAD_LETTER_QUEUE).getMessageCount()};
        }
    }

    private record DeadLetter(String messageId, boolean hasReason, boolean deliveryLimit, String reason) {
    }

    /**
     * The dead letters of a queue, read without taking them (they go back on close); none if the queue
     * does not exist (the relay's parking queue is declared by the relay's first connection). Each read
     * counts as a delivery: on RabbitMQ 4.x (a quorum queue's default delivery limit is 20) read a
     * queue without a dead-letter exchange of its own a few times per run, not in a loop.
     */
    private List<DeadLetter> deadLetters(String queue) throws Exception {
        List<DeadLetter> letters = new ArrayList<>();
        try (Connection connection = system.broker().connectionFactory().newConnection("verifier")) {
            if (!exists(connection, queue)) {
                return letters;
            }
            Channel channel = connection.createChannel();
            for (GetResponse message; (message = channel.basicGet(queue, false)) != null; ) {
                Map<String, Object> headers = message.getProps().getHeaders() == null ? Map.of() : message.getProps().getHeaders();
                boolean deliveryLimit = String.valueOf(headers.get("x-death")).contains("delivery_limit")
                        || "delivery_limit".equals(String.valueOf(headers.get("x-first-death-reason")));
                letters.add(new DeadLetter(Objects.requireNonNullElse(message.getProps().getMessageId(), "(no message id)"),
                        headers.get(MessageHeaders.DEAD_LETTER_REASON) != null, deliveryLimit,
                        String.valueOf(headers.get(MessageHeaders.DEAD_LETTER_REASON))));
            }
        }
        return letters;
    }

    /** Whether a queue exists: asked on a channel of its own, which the broker closes if it does not. */
    private static boolean exists(Connection connection, String queue) throws IOException {
        Channel probe = connection.createChannel();
        try {
            probe.queueDeclarePassive(queue);
            probe.close();
            return true;
        } catch (IOException e) {
            if (e.getCause() instanceof com.rabbitmq.client.ShutdownSignalException closed && !closed.isHardError()
                    && String.valueOf(closed.getReason()).contains("404")) {
                return false;
            }
            throw e;
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("closing a channel timed out", e);
        }
    }

    /** Events in the relay's parking queue (0 if the relay never declared it). */
    private long parkedCount() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("verifier")) {
            return exists(connection, Topology.RELAY_PARKING_QUEUE)
                    ? connection.createChannel().queueDeclarePassive(Topology.RELAY_PARKING_QUEUE).getMessageCount() : 0;
        }
    }

    /** Messages delivered to a consumer and not yet acknowledged, from the management API (AMQP does not tell). */
    /** Ready in inventory's partitions, all of them. */
    private static long inventoryReady(Channel channel) throws IOException {
        long ready = 0;
        for (String partition : Topology.inventoryPartitions()) {
            ready += channel.queueDeclarePassive(partition).getMessageCount();
        }
        return ready;
    }

    private long inventoryUnacked() throws Exception {
        long unacked = 0;
        for (String partition : Topology.inventoryPartitions()) {
            unacked += unacked(partition);
        }
        return unacked;
    }

    private long unacked(String queue) throws Exception {
        Broker broker = system.broker();
        URI uri = broker.management().resolve("/api/queues/" + URLEncoder.encode(broker.virtualHost(), StandardCharsets.UTF_8)
                + "/" + URLEncoder.encode(queue, StandardCharsets.UTF_8));
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        (broker.user() + ":" + broker.password()).getBytes(StandardCharsets.UTF_8))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("management API " + uri + " answered " + response.statusCode());
        }
        Matcher unacked = UNACKED.matcher(response.body());
        return unacked.find() ? Long.parseLong(unacked.group(1)) : 0; // absent until the first statistics of a new queue
    }

    /** An outbox row's aggregate id as an order id; null if it is not one (an event the run wrote for a refused exchange). */
    private static UUID uuidOrNull(String id) {
        try {
            return id == null ? null : UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private interface Row {
        void read(ResultSet rs) throws SQLException;
    }

    private static void query(Database database, String sql, Row row) throws SQLException {
        try (var c = database.connect(); Statement statement = c.createStatement(); ResultSet rs = statement.executeQuery(sql)) {
            while (rs.next()) {
                row.read(rs);
            }
        }
    }

    private static Set<UUID> uuids(Database database, String sql) throws SQLException {
        Set<UUID> ids = new HashSet<>();
        query(database, sql, rs -> ids.add(rs.getObject(1, UUID.class)));
        return ids;
    }

    private static Map<UUID, Map<String, Integer>> quantities(Database database, String sql) throws SQLException {
        Map<UUID, Map<String, Integer>> byOrder = new HashMap<>();
        query(database, sql, rs -> byOrder.computeIfAbsent(rs.getObject(1, UUID.class), o -> new TreeMap<>())
                .merge(rs.getString(2), rs.getInt(3), Integer::sum));
        return byOrder;
    }
}
