package dev.outboxinbox.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.system.Replay;
import dev.outboxinbox.system.SystemUnderTest;
import dev.outboxinbox.testing.OperationsAuth;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Messages the chaos run publishes straight to the broker (poison, copies of delivered events), outbox
 * rows it writes itself (for an exchange the broker refuses), and what it changes and reads through the
 * broker's management API (a user's permissions, its connections).
 */
final class Injections {

    /**
     * An exchange the relay's broker user may not configure (deploy/rabbitmq/users: outbox_relay configures
     * ^(orders|inventory|outbox-relay\.parked)$): declaring it is refused with 403, as for a new producing
     * service whose permissions were forgotten.
     */
    static final String REFUSED_EXCHANGE = "chaos.refused";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final SystemUnderTest system;
    private final Random random;
    private final Set<String> poison = new TreeSet<>();
    private final Set<String> refused = Collections.synchronizedSet(new TreeSet<>());
    private int republished;

    Injections(SystemUnderTest system, long seed) {
        this.system = system;
        this.random = new Random(seed);
    }

    /** Every poison message id published so far: exactly these belong in the dead-letter queue. */
    Set<String> poison() {
        return poison;
    }

    int republished() {
        return republished;
    }

    /** Every event id written for {@link #REFUSED_EXCHANGE} so far: exactly these belong among the relay's parked events. */
    Set<String> refused() {
        synchronized (refused) {
            return Set.copyOf(refused);
        }
    }

    /**
     * Writes {@code count} well-formed rows into order-service's outbox, in one transaction, routed to
     * {@link #REFUSED_EXCHANGE}: an OrderCreated of an order that does not exist (its aggregate id a fresh
     * UUID), so that nothing downstream may ever see it. Returns their event ids.
     */
    List<String> writeRefusedEvents(Target target, int count) {
        List<String> ids = new ArrayList<>(count);
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < count; i++) {
            // Well-formed UUIDs, drawn from the seed.
            UUID id = UUID.nameUUIDFromBytes(("chaos-refused-event-" + random.nextLong()).getBytes(StandardCharsets.UTF_8));
            UUID order = UUID.nameUUIDFromBytes(("chaos-refused-order-" + random.nextLong()).getBytes(StandardCharsets.UTF_8));
            String payload = "{\"eventId\":\"%s\",\"orderId\":\"%s\",\"lines\":[{\"sku\":\"SKU-APPLE\",\"quantity\":1}]}"
                    .formatted(id, order);
            values.append(i == 0 ? "" : ", ").append("('%s', '%s', '%s', '%s', 1, '%s', now())"
                    .formatted(id, REFUSED_EXCHANGE, order, OrderCreated.TYPE, payload));
            ids.add(id.toString());
        }
        target.superuserSql("orders", "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                + " VALUES " + values);
        refused.addAll(ids);
        return ids;
    }

    /** A broker user's permissions on the virtual host (configure, write, read), from the management API. */
    List<String> permissions(String user) throws Exception {
        JsonNode permissions = JSON.readTree(management("GET", "/api/permissions/" + vhost() + "/" + user, null));
        return List.of(permissions.path("configure").asText(), permissions.path("write").asText(), permissions.path("read").asText());
    }

    /** Sets a broker user's permissions on the virtual host: configure, write, read (regular expressions). */
    void setPermissions(String user, List<String> permissions) throws Exception {
        management("PUT", "/api/permissions/" + vhost() + "/" + user, JSON.writeValueAsString(
                Map.of("configure", permissions.get(0), "write", permissions.get(1), "read", permissions.get(2))));
    }

    /**
     * The broker connections a user holds now, by name (the management API's list, not its statistics),
     * leaving out the short-lived ones a consumer opens to look at its dead letters.
     */
    Set<String> connectionsOf(String user) throws Exception {
        Set<String> names = new TreeSet<>();
        for (JsonNode connection : JSON.readTree(management("GET", "/api/connections?columns=user,name,user_provided_name", null))) {
            if (user.equals(connection.path("user").asText()) && !connection.path("user_provided_name").asText().contains("dead-letters")) {
                names.add(connection.path("name").asText());
            }
        }
        return names;
    }

    private String vhost() {
        return URLEncoder.encode(system.broker().virtualHost(), StandardCharsets.UTF_8);
    }

    private String management(String method, String path, String body) throws Exception {
        String credentials = system.broker().user() + ":" + system.broker().password();
        HttpRequest request = HttpRequest.newBuilder(system.broker().management().resolve(path)).timeout(Duration.ofSeconds(10))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException(method + " " + path + " answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }

    /** Three kinds of poison: not JSON, JSON that breaks the schema, an unknown schema version. */
    void publishPoison() throws Exception {
        String[][] kinds = {
                {"{\"orderId\": ", "1"},
                {"{\"eventId\": \"x\", \"orderId\": 42, \"lines\": []}", "1"},
                {"{}", "99"}};
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-poison");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            for (String[] kind : kinds) {
                String id = "poison-" + Long.toHexString(random.nextLong());
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(id).type(OrderCreated.TYPE).contentType(MessageHeaders.CONTENT_TYPE).deliveryMode(2)
                        .headers(Map.of(MessageHeaders.SCHEMA_VERSION, Integer.parseInt(kind[1]))).build();
                channel.basicPublish(Topology.ORDERS_EXCHANGE, Topology.INVENTORY_BINDING, true, properties,
                        kind[0].getBytes(StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(10_000);
                poison.add(id);
            }
        }
    }

    /** How long a republish waits for events to copy (a kill of order-service early in the run delays them). */
    static final Duration REPUBLISH_WAIT = Duration.ofSeconds(60);

    /**
     * Publishes {@code count} copies of events drawn from the outbox's newest 500, exactly as the relay published them:
     * a copy may reach inventory before its original, with it in one batch, or after it. With {@code onlyApplied} (the
     * deduplication control), only of events inventory-service has applied (their ids in its inbox): a copy that reached
     * inventory with its original, in one batch, is absorbed by the order's own key (an order is decided once per batch)
     * even with deduplication off, and the control of one seed saw anything from 0 to 37 duplicate effects; a copy of an
     * applied event is a second delivery, which only the inbox stops. With none to draw from yet, it waits within
     * {@link #REPUBLISH_WAIT}, then fails as a fault that could not be injected: a republish of nothing made no copy, and
     * a negative control that relies on its copies would fail for the harness's sake.
     */
    void republish(int count, boolean onlyApplied) throws Exception {
        long deadline = System.nanoTime() + REPUBLISH_WAIT.toNanos();
        // The control waits for as many applied events as it makes copies (each one's copy is a duplicate effect of its
        // own: seed 12 copied the one event applied yet 20 times, and the verifier saw 1), then takes what there is.
        int enough = onlyApplied ? count : 1;
        List<Replay.OutboxEvent> candidates = candidates(onlyApplied);
        while (candidates.size() < enough && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(250)); // polling the databases, bounded by the deadline
            candidates = candidates(onlyApplied);
        }
        if (candidates.isEmpty()) {
            throw new IllegalStateException("no event " + (onlyApplied ? "applied by inventory-service" : "in the outbox")
                    + " to republish after " + REPUBLISH_WAIT.toSeconds() + " s");
        }
        List<Replay.OutboxEvent> chosen = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            chosen.add(candidates.get(random.nextInt(candidates.size())));
        }
        Replay.publish(system.broker(), chosen);
        republished += count;
    }

    private List<Replay.OutboxEvent> candidates(boolean onlyApplied) throws SQLException {
        List<Replay.OutboxEvent> newest = Replay.newest(system.orders(), 500);
        return onlyApplied ? applied(newest) : newest;
    }

    /** The events inventory-service's inbox holds (applied, or absorbed as copies), in the order given. */
    private List<Replay.OutboxEvent> applied(List<Replay.OutboxEvent> events) throws SQLException {
        Set<String> inInbox = new HashSet<>();
        try (var c = system.inventory().connect(); PreparedStatement query = c.prepareStatement(
                "SELECT message_id FROM inbox WHERE message_id = ANY(?)")) {
            query.setArray(1, c.createArrayOf("text", events.stream().map(Replay.OutboxEvent::id).toArray()));
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    inInbox.add(rs.getString(1));
                }
            }
        }
        return events.stream().filter(event -> inInbox.contains(event.id())).toList();
    }

    /**
     * What a mistaken deploy or a hand in the management UI does: inventory's partitions stop getting order events.
     * Every binding goes (creations and cancellations): with only OrderCreated unbound, the relay would park an order's
     * creation while its cancellation flowed, and inventory would see the cancellation first (a reordering this
     * fault would cause, not the system).
     */
    void unbindInventoryQueue() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-unbind");
             Channel channel = connection.createChannel()) {
            for (String binding : Topology.INVENTORY_BINDINGS) {
                channel.exchangeUnbind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, binding);
            }
        }
    }

    void bindInventoryQueue() throws Exception {
        try (Connection connection = system.broker().connectionFactory().newConnection("chaos-bind");
             Channel channel = connection.createChannel()) {
            for (String binding : Topology.INVENTORY_BINDINGS) {
                channel.exchangeBind(Topology.INVENTORY_QUEUE, Topology.ORDERS_EXCHANGE, binding);
            }
        }
    }

    /** What the operator does once the binding is back: the relay sends its parked events on. */
    String republishParked(URI relay) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(relay.resolve("/parked/republish")).header("Authorization", OperationsAuth.operator()).timeout(Duration.ofSeconds(60))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("POST /parked/republish answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
}
