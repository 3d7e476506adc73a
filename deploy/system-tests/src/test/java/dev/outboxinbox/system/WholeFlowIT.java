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
 * POST /orders → order + outbox row → WAL → relay → RabbitMQ → inbox → stock.
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
        inventory.awaitReady(Duration.ofMinutes(2));
        orders.awaitReady(Duration.ofMinutes(2));
        relay.awaitReady(Duration.ofMinutes(2));
        system = SystemFixture.system(orders.port(), inventory.port());
        verifier = new Verifier(system);
    }

    @AfterAll
    static void stopTheSystem() throws Exception {
        for (ServiceProcess service : new ServiceProcess[] {relay, orders, inventory}) {
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
        double duplicatesBefore = duplicatesCounted();

        Replay.publish(system.broker(), newest);

        await().atMost(Duration.ofSeconds(30)).until(() -> duplicatesCounted() > duplicatesBefore);
        assertThat(stock()).as("stock after the duplicate").isEqualTo(stockBefore);
        assertThat(count(system.inventory(), "SELECT count(*) FROM inbox")).as("inbox rows").isEqualTo(inboxBefore);
        VerificationReport report = verifier.verify(placed, Set.of(), null, new Verifier.Settling(0, 0), Duration.ZERO);
        assertThat(report.violations()).as(report.toText()).isEmpty();
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

    /** inventory-service's own count of duplicates, from its metrics endpoint. */
    private static double duplicatesCounted() throws Exception {
        String metrics = HTTP.send(HttpRequest.newBuilder(system.inventoryService().resolve("/q/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Matcher duplicate = Pattern.compile("inventory_inbox_messages_total\\{outcome=\"duplicate\"} (\\S+)").matcher(metrics);
        assertThat(duplicate.find()).as("the duplicate counter in /q/metrics").isTrue();
        return Double.parseDouble(duplicate.group(1));
    }

    private static JsonNode getJson(URI uri) throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("GET %s: %s", uri, response.body()).isEqualTo(200);
        return JSON.readTree(response.body());
    }
}
