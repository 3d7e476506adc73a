package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The whole path with the packaged services as processes, least-privileged as deployed:
 * POST /orders → order + outbox row → WAL → relay → RabbitMQ → inbox → stock + reply in inventory's
 * outbox → WAL → second relay → RabbitMQ → order-service's inbox → order CONFIRMED or REJECTED.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WholeFlowIT {

    /** The demo catalogue inventory-service seeds (its migration V2): the stock before any order. */
    private static final Map<String, Integer> SEED = Map.of(
            "SKU-APPLE", 1000, "SKU-PEAR", 500, "SKU-PLUM", 200, "SKU-FIG", 50, "SKU-DURIAN", 0);
    private static final int ORDERS = 400;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static ServiceProcess inventory;
    private static ServiceProcess orders;
    private static ServiceProcess relay;
    private static ServiceProcess replyRelay;
    private static SystemUnderTest system;
    private static Verifier verifier;
    private static List<OrderLoad.Request> placed;

    @BeforeAll
    static void startTheSystem() throws Exception {
        SystemFixture.prepare();
        File logs = new File("target");
        inventory = ServiceProcess.start(SystemFixture.packaged("inventory-service"), SystemFixture.inventoryService(),
                new File(logs, "system-inventory-service.log"));
        orders = ServiceProcess.start(SystemFixture.packaged("order-service"), SystemFixture.orderService(),
                new File(logs, "system-order-service.log"));
        relay = ServiceProcess.start(SystemFixture.packaged("outbox-relay"), SystemFixture.outboxRelay(),
                new File(logs, "system-outbox-relay.log"));
        replyRelay = ServiceProcess.start(SystemFixture.packaged("outbox-relay"), SystemFixture.replyRelay(),
                new File(logs, "system-outbox-relay-inventory.log"));
        inventory.awaitReady(Duration.ofMinutes(2));
        orders.awaitReady(Duration.ofMinutes(2));
        relay.awaitReady(Duration.ofMinutes(2));
        replyRelay.awaitReady(Duration.ofMinutes(2));
        system = SystemFixture.system(orders.port(), inventory.port());
        verifier = new Verifier(system);
    }

    @AfterAll
    static void stopTheSystem() throws Exception {
        for (ServiceProcess service : new ServiceProcess[] {relay, replyRelay, orders, inventory}) {
            if (service != null) {
                service.stopGracefully();
            }
        }
        SystemFixture.dropSlot();
    }

    @Test
    @Order(1)
    void everyOrderTakesEffectExactlyOnce() throws Exception {
        placed = new OrderLoad(system.orderService(), "system-" + System.currentTimeMillis(), 7, 3)
                .run(ORDERS, 200, progress -> { });
        assertThat(placed).allSatisfy(r -> assertThat(r.result()).as(r.detail()).isEqualTo(OrderLoad.Result.OK));

        Verifier.Settling converged = verifier.awaitConvergence(verifier.walPosition(), 0, Duration.ofMinutes(1), System.out::println);
        VerificationReport report = verifier.verify(placed, Set.of(), null, converged, Duration.ofMinutes(1));

        assertThat(report.violations()).as(report.toText()).isEmpty();
        assertThat(report.committedOrders()).isEqualTo(ORDERS);
        assertThat(report.eventsPublished()).isEqualTo(ORDERS);
        assertThat(report.eventsInInbox()).as("one inbox row per event").isEqualTo(ORDERS);
        assertThat(report.repliesInInbox()).as("one reply per order, taken once by order-service").isEqualTo(ORDERS);
        assertThat(report.ordersDecided()).containsOnlyKeys("CONFIRMED", "REJECTED");
    }

    @Test
    @Order(2)
    void stockIsTheSeedMinusWhatTheReservedOrdersHold() throws Exception {
        Map<String, Integer> reserved = new TreeMap<>();
        int rejected = 0;
        for (OrderLoad.Request order : placed) {
            JsonNode outcome = getJson(system.inventoryService().resolve("/orders/" + order.orderId() + "/reservation"));
            if ("RESERVED".equals(outcome.get("status").asText())) {
                order.lines().forEach(line -> reserved.merge(line.sku(), line.quantity(), Integer::sum));
            } else {
                rejected++;
                assertThat(outcome.get("status").asText()).isEqualTo("REJECTED");
                assertThat(outcome.get("reason").asText()).as("why %s was rejected", order.orderId()).isNotBlank();
            }
            if (order.lines().stream().anyMatch(line -> line.sku().equals("SKU-DURIAN"))) {
                assertThat(outcome.get("status").asText()).as("an order for SKU-DURIAN, of which there is none").isEqualTo("REJECTED");
            }
        }
        assertThat(rejected).as("orders rejected for stock").isPositive();
        assertThat(reserved).as("orders reserved").isNotEmpty();

        for (Map.Entry<String, Integer> seed : SEED.entrySet()) {
            JsonNode product = getJson(system.inventoryService().resolve("/products/" + seed.getKey()));
            int held = reserved.getOrDefault(seed.getKey(), 0);
            assertThat(product.get("onHand").asInt()).isEqualTo(seed.getValue());
            assertThat(product.get("available").asInt()).as("available %s", seed.getKey()).isEqualTo(seed.getValue() - held);
        }
    }

    @Test
    @Order(3)
    void anEventRepublishedStraightToTheBrokerChangesNothing() throws Exception {
        List<Replay.OutboxEvent> newest = Replay.newest(system.orders(), 1);
        assertThat(newest).hasSize(1);
        Map<String, Integer> stockBefore = stock();
        long inboxBefore = count(system.inventory(), "SELECT count(*) FROM inbox");
        double duplicatesBefore = duplicatesCounted(system.inventoryService(), "inventory-service");

        Replay.publish(system.broker(), newest);

        await().atMost(Duration.ofSeconds(30)).until(() -> duplicatesCounted(system.inventoryService(), "inventory-service") > duplicatesBefore);
        assertThat(stock()).as("stock after the duplicate").isEqualTo(stockBefore);
        assertThat(count(system.inventory(), "SELECT count(*) FROM inbox")).as("inbox rows").isEqualTo(inboxBefore);
        VerificationReport report = verifier.verify(placed, Set.of(), null, new Verifier.Settling(0, 0), Duration.ZERO);
        assertThat(report.violations()).as(report.toText()).isEmpty();
    }

    /** What a client sees: GET /orders/{id} says what inventory decided. */
    @Test
    @Order(4)
    void everyOrderShowsInventorysDecision() throws Exception {
        for (OrderLoad.Request order : placed) {
            String decided = getJson(system.inventoryService().resolve("/orders/" + order.orderId() + "/reservation")).get("status").asText();
            JsonNode shown = getJson(system.orderService().resolve("/orders/" + order.orderId()));
            assertThat(shown.get("status").asText()).as("order %s, %s in inventory", order.orderId(), decided)
                    .isEqualTo("RESERVED".equals(decided) ? "CONFIRMED" : "REJECTED");
            if ("REJECTED".equals(decided)) {
                assertThat(shown.get("statusReason").asText()).isNotBlank();
            }
        }
    }

    @Test
    @Order(5)
    void anOrderGoesFromPendingToConfirmedAndAnOrderOfDurianToRejected() throws Exception {
        UUID apple = place("SKU-APPLE");
        UUID durian = place("SKU-DURIAN");
        await().atMost(Duration.ofSeconds(30)).until(() -> "CONFIRMED".equals(statusOf(apple)));
        await().atMost(Duration.ofSeconds(30)).until(() -> "REJECTED".equals(statusOf(durian)));
        assertThat(getJson(system.orderService().resolve("/orders/" + durian)).get("statusReason").asText())
                .isEqualTo("insufficient stock for SKU-DURIAN: 1 wanted, 0 available");
    }

    @Test
    @Order(6)
    void aReplyRepublishedTenTimesChangesNothing() throws Exception {
        List<Replay.OutboxEvent> newest = Replay.newest(system.inventory(), 1);
        assertThat(newest).hasSize(1);
        UUID order = UUID.fromString(newest.get(0).aggregateId());
        String statusBefore = statusOf(order);
        long inboxBefore = count(system.orders(), "SELECT count(*) FROM inbox");
        double duplicatesBefore = duplicatesCounted(system.orderService(), "order-service");

        for (int i = 0; i < 10; i++) {
            Replay.publish(system.broker(), newest);
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> duplicatesCounted(system.orderService(), "order-service") >= duplicatesBefore + 10);
        assertThat(statusOf(order)).isEqualTo(statusBefore);
        assertThat(count(system.orders(), "SELECT count(*) FROM orders WHERE id = '" + order + "' AND decided_by = '" + newest.get(0).id() + "'"))
                .as("still decided by that reply").isOne();
        assertThat(count(system.orders(), "SELECT count(*) FROM inbox")).as("order-service's inbox rows").isEqualTo(inboxBefore);
        VerificationReport report = verifier.verify(placed, Set.of(), null, new Verifier.Settling(0, 0), Duration.ZERO);
        assertThat(report.violations()).as(report.toText()).isEmpty();
    }

    /** POST /orders of one unit, with an Idempotency-Key (every committed order of a run has one); the answer says PENDING. */
    private static UUID place(String sku) throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(system.orderService().resolve("/orders"))
                .header("Content-Type", "application/json").header("Idempotency-Key", "system-" + UUID.randomUUID())
                .POST(HttpRequest.BodyPublishers.ofString("{\"customerId\": \"system\", \"lines\": [{\"sku\": \"" + sku + "\", \"quantity\": 1}]}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
        JsonNode placedOrder = JSON.readTree(response.body());
        assertThat(placedOrder.get("status").asText()).as("placed, not yet decided").isEqualTo("PENDING");
        return UUID.fromString(placedOrder.get("id").asText());
    }

    private static String statusOf(UUID order) throws Exception {
        return getJson(system.orderService().resolve("/orders/" + order)).get("status").asText();
    }

    private static Map<String, Integer> stock() throws Exception {
        Map<String, Integer> stock = new TreeMap<>();
        try (var c = system.inventory().connect(); Statement sql = c.createStatement();
             ResultSet rs = sql.executeQuery("SELECT sku, reserved FROM products")) {
            while (rs.next()) {
                stock.put(rs.getString(1), rs.getInt(2));
            }
        }
        return stock;
    }

    private static long count(Database database, String query) throws Exception {
        try (var c = database.connect(); Statement sql = c.createStatement(); ResultSet rs = sql.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** A service's own count of duplicates its inbox absorbed, from its metrics endpoint. */
    private static double duplicatesCounted(URI service, String consumer) throws Exception {
        String metrics = HTTP.send(HttpRequest.newBuilder(service.resolve("/q/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Matcher duplicate = Pattern.compile("inbox_messages_total\\{consumer=\"" + consumer + "\",outcome=\"duplicate\"} (\\S+)").matcher(metrics);
        assertThat(duplicate.find()).as("the duplicate counter in /q/metrics").isTrue();
        return Double.parseDouble(duplicate.group(1));
    }

    private static JsonNode getJson(URI uri) throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("GET %s: %s", uri, response.body()).isEqualTo(200);
        return JSON.readTree(response.body());
    }
}
