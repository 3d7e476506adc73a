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
 *   <li>no convergence within the bound: both queues drained (nothing ready, nothing unacknowledged),
 *       every committed order decided in inventory and in order-service, both relays' slots
 *       confirmed past the end of the load.</li>
 * </ul>
 */
public final class Verifier {

    private static final int EXAMPLES = 10;
    /** RabbitMQ's management statistics (unacked counts) are refreshed every 5 s by default. */
    private static final long STATS_REFRESH_MILLIS = 6_000;

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final Pattern UNACKED = Pattern.compile("\"messages_unacknowledged\":(\\d+)");

    private final SystemUnderTest system;

    public Verifier(SystemUnderTest system) {
        this.system = system;
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

    /** A cheap look at how far delivery has come. */
    public record Convergence(int committed, int undecided, long queued, long unacked, long deadLetters, boolean slotCaughtUp,
                              int pending, long repliesQueued, long repliesUnacked, long replyDeadLetters, boolean replySlotCaughtUp) {

        /** Drained means nothing ready and nothing unacknowledged: a message in a consumer's hands is not done. */
        boolean settled(long expectedDeadLetters) {
            return undecided == 0 && queued == 0 && unacked == 0 && deadLetters == expectedDeadLetters && slotCaughtUp
                    && pending == 0 && repliesQueued == 0 && repliesUnacked == 0 && replyDeadLetters == 0 && replySlotCaughtUp;
        }

        /** Every order decided in inventory and in order-service, nothing waiting in either queue. */
        boolean delivered() {
            return undecided == 0 && queued == 0 && pending == 0 && repliesQueued == 0;
        }

        @Override
        public String toString() {
            return ("%d committed, %d undecided, %d queued, %d unacked, %d dead letters, slot %s;"
                    + " replies: %d orders pending, %d queued, %d unacked, %d dead letters, slot %s")
                    .formatted(committed, undecided, queued, unacked, deadLetters, slotCaughtUp ? "caught up" : "behind",
                            pending, repliesQueued, repliesUnacked, replyDeadLetters, replySlotCaughtUp ? "caught up" : "behind");
        }
    }

    public Convergence convergence(String walTarget) throws Exception {
        Set<UUID> undecided = uuids(system.orders(), "SELECT id FROM orders");
        int committed = undecided.size();
        undecided.removeAll(uuids(system.inventory(), "SELECT order_id FROM order_outcomes"));
        int pending = uuids(system.orders(), "SELECT id FROM orders WHERE status = 'PENDING'").size();
        long[] depth = queueDepths();
        return new Convergence(committed, undecided.size(), depth[0], inventoryUnacked(), depth[1],
                slotConfirmedPast(system.relaySlot(), walTarget),
                pending, depth[2], unacked(Topology.ORDER_REPLIES_QUEUE), depth[3], slotConfirmedPast(system.replyRelaySlot(), walTarget));
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
                if (!state.settled(expectedDeadLetters)) {
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

    /**
     * The full check.
     * @param requests           what the load generator recorded (empty if orders came from elsewhere)
     * @param injectedPoison     message ids published as poison: exactly these belong in the dead-letter queue
     * @param duplicatesAbsorbed deliveries the inbox recognised as duplicates, if known
     * @param settling           from {@link #awaitConvergence}
     */
    public VerificationReport verify(List<OrderLoad.Request> requests, Set<String> injectedPoison, Long duplicatesAbsorbed,
                                     Settling settling, Duration bound) throws Exception {
        Violations violations = new Violations();

        // The truth: what order-service committed.
        Set<UUID> committed = uuids(system.orders(), "SELECT id FROM orders");
        Map<UUID, Map<String, Integer>> lines = quantities(system.orders(), "SELECT order_id, sku, quantity FROM order_lines");
        Map<String, UUID> keys = new HashMap<>();
        query(system.orders(), "SELECT idempotency_key, order_id FROM idempotency_keys",
                rs -> keys.put(rs.getString(1), rs.getObject(2, UUID.class)));
        Map<String, UUID> outbox = new HashMap<>();
        query(system.orders(), "SELECT id::text, aggregateid FROM outbox",
                rs -> outbox.put(rs.getString(1), UUID.fromString(rs.getString(2))));

        // The effects: what inventory-service did.
        Map<UUID, String> outcomes = new HashMap<>();
        Map<UUID, String> outcomeMessages = new HashMap<>();
        query(system.inventory(), "SELECT order_id, status, message_id FROM order_outcomes", rs -> {
            outcomes.put(rs.getObject(1, UUID.class), rs.getString(2));
            outcomeMessages.put(rs.getObject(1, UUID.class), rs.getString(3));
        });
        Map<UUID, Map<String, Integer>> reservations = quantities(system.inventory(), "SELECT order_id, sku, quantity FROM reservations");
        Map<String, Integer> reservedBySku = new TreeMap<>();
        query(system.inventory(), "SELECT sku, reserved FROM products", rs -> reservedBySku.put(rs.getString(1), rs.getInt(2)));
        Set<String> inbox = new HashSet<>();
        query(system.inventory(), "SELECT message_id FROM inbox", rs -> inbox.add(rs.getString(1)));
        List<DeadLetter> deadLetters = deadLetters(Topology.INVENTORY_DEAD_LETTER_QUEUE);
        List<String> deadLetterIds = deadLetters.stream().map(DeadLetter::messageId).toList();

        // The replies: what inventory told order-service, and what order-service made of it.
        Map<UUID, String> statuses = new HashMap<>();
        Map<UUID, String> decidedBy = new HashMap<>();
        query(system.orders(), "SELECT id, status, decided_by FROM orders", rs -> {
            statuses.put(rs.getObject(1, UUID.class), rs.getString(2));
            decidedBy.put(rs.getObject(1, UUID.class), rs.getString(3));
        });
        Map<String, UUID> replies = new HashMap<>();
        Map<String, String> replyTypes = new HashMap<>();
        Map<UUID, Integer> repliesPerOrder = new HashMap<>();
        query(system.inventory(), "SELECT id::text, aggregateid, type FROM outbox", rs -> {
            UUID order = UUID.fromString(rs.getString(2));
            replies.put(rs.getString(1), order);
            replyTypes.put(rs.getString(1), rs.getString(3));
            repliesPerOrder.merge(order, 1, Integer::sum);
        });
        Set<String> replyInbox = new HashSet<>();
        query(system.orders(), "SELECT message_id FROM inbox WHERE consumer = 'order-service'", rs -> replyInbox.add(rs.getString(1)));
        List<DeadLetter> replyDeadLetters = deadLetters(Topology.ORDER_DEAD_LETTER_QUEUE);

        // Requests: an acknowledged order exists; a definite failure wrote nothing.
        Map<String, Long> byResult = new TreeMap<>();
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
        }

        // Source: every committed order has its event, in the same transaction.
        Set<UUID> withEvent = new HashSet<>(outbox.values());
        for (UUID order : committed) {
            if (!withEvent.contains(order)) {
                violations.lost("committed order has no outbox event", order);
            }
        }

        // Delivery: every committed order decided; nothing decided that was not committed.
        for (UUID order : committed) {
            if (!outcomes.containsKey(order)) {
                violations.lost("committed order has no outcome in inventory", order);
            }
        }
        for (Map.Entry<UUID, String> outcome : outcomes.entrySet()) {
            if (!committed.contains(outcome.getKey())) {
                violations.phantom("outcome for an order that was never committed", outcome.getKey());
            } else if (!outbox.containsKey(outcomeMessages.get(outcome.getKey()))) {
                violations.phantom("outcome decided by a message that is not an outbox event", outcome.getKey());
            } else if (!outcome.getKey().equals(outbox.get(outcomeMessages.get(outcome.getKey())))) {
                violations.phantom("outcome decided by another order's event", outcome.getKey()
                        + " by " + outcomeMessages.get(outcome.getKey()));
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
            int sent = repliesPerOrder.getOrDefault(order, 0);
            if (sent == 0) {
                violations.lost("inventory decided an order without replying", order);
            } else if (sent > 1) {
                violations.duplicateEffect("inventory replied more than once for an order", order + ": " + sent + " replies");
            }
            String status = statuses.get(order);
            String expected = "RESERVED".equals(outcome.getValue()) ? "CONFIRMED" : "REJECTED";
            if ("PENDING".equals(status)) {
                violations.lost("inventory decided, order-service still PENDING (the reply did not arrive)", order);
            } else if (!expected.equals(status)) {
                violations.other("order-service says " + status + ", inventory " + outcome.getValue() + ": " + order);
            }
        }
        for (Map.Entry<UUID, String> decided : decidedBy.entrySet()) {
            if (decided.getValue() == null) {
                continue;
            }
            if (!decided.getKey().equals(replies.get(decided.getValue()))) {
                violations.phantom("order decided by a message that is not inventory's reply to it", decided.getKey()
                        + " by " + decided.getValue());
            } else if (!statuses.get(decided.getKey()).equals(
                    replyTypes.get(decided.getValue()).equals("InventoryReserved") ? "CONFIRMED" : "REJECTED")) {
                violations.other("order " + decided.getKey() + " is " + statuses.get(decided.getKey()) + " by a "
                        + replyTypes.get(decided.getValue()));
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

        // Effects: each order's effect exactly once; stock = what the reserved orders add up to.
        Map<String, Integer> expectedBySku = new TreeMap<>();
        for (Map.Entry<UUID, String> outcome : outcomes.entrySet()) {
            UUID order = outcome.getKey();
            Map<String, Integer> held = reservations.getOrDefault(order, Map.of());
            Map<String, Integer> ordered = lines.getOrDefault(order, Map.of());
            if ("RESERVED".equals(outcome.getValue())) {
                ordered.forEach((sku, quantity) -> expectedBySku.merge(sku, quantity, Integer::sum));
                if (exceeds(held, ordered)) {
                    violations.duplicateEffect("order reserved more than it ordered", order + " holds " + held + ", ordered " + ordered);
                } else if (!held.equals(ordered)) {
                    violations.other("reserved order " + order + " holds " + held + ", ordered " + ordered);
                }
            } else if (!held.isEmpty()) {
                violations.duplicateEffect("rejected order holds stock", order + " holds " + held);
            }
        }
        for (String sku : reservedBySku.keySet()) {
            int reserved = reservedBySku.get(sku);
            int expected = expectedBySku.getOrDefault(sku, 0);
            if (reserved > expected) {
                violations.duplicateEffect("SKU reserved beyond its reserved orders", sku + ": " + reserved + " reserved, orders add up to " + expected);
            } else if (reserved < expected) {
                violations.other("stock of " + sku + " reserved " + reserved + ", its reserved orders add up to " + expected);
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

        if (settling.settledMillis() < 0) {
            violations.other("did not converge within " + bound.toMillis() + " ms");
        }
        Map<String, Long> decided = new TreeMap<>();
        statuses.values().forEach(status -> decided.merge(status, 1L, Long::sum));
        return new VerificationReport(byResult, committed.size(), outbox.size(), inbox.size(), decided, replyInbox.size(), duplicatesAbsorbed,
                violations.duplicateEffects, violations.lost, violations.phantoms, deadLetterIds.size(), injectedPoison.size(),
                settling.deliveredMillis(), settling.settledMillis(), bound.toMillis(), null, violations.list());
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

    /** The dead letters of a queue, read without taking them (they go back on close). */
    private List<DeadLetter> deadLetters(String queue) throws Exception {
        List<DeadLetter> letters = new ArrayList<>();
        try (Connection connection = system.broker().connectionFactory().newConnection("verifier");
             Channel channel = connection.createChannel()) {
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
