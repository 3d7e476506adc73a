package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.system.client.ApiClient;
import dev.outboxinbox.system.client.ApiException;
import dev.outboxinbox.system.client.ApiResponse;
import dev.outboxinbox.system.client.api.DeadLettersApi;
import dev.outboxinbox.system.client.api.OrdersApi;
import dev.outboxinbox.system.client.model.FieldError;
import dev.outboxinbox.system.client.model.OrderView;
import dev.outboxinbox.system.client.model.PlaceOrderLine;
import dev.outboxinbox.system.client.model.PlaceOrderRequest;
import dev.outboxinbox.system.client.model.Problem;
import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.OtlpReceiver;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
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
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

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
    private static OtlpReceiver collector;

    @BeforeAll
    static void startTheSystem() throws Exception {
        SystemFixture.prepare();
        File logs = new File("target");
        collector = OtlpReceiver.start();
        URI traces = collector.endpoint();
        inventory = ServiceProcess.start(SystemFixture.packaged("inventory-service"),
                SystemFixture.traced(SystemFixture.inventoryService(), traces, "inventory-service"),
                new File(logs, "system-inventory-service.log"));
        relay = ServiceProcess.start(SystemFixture.packaged("outbox-relay"),
                SystemFixture.traced(SystemFixture.outboxRelay(), traces, "outbox-relay"),
                new File(logs, "system-outbox-relay.log"));
        replyRelay = ServiceProcess.start(SystemFixture.packaged("outbox-relay"),
                SystemFixture.traced(SystemFixture.replyRelay(), traces, "outbox-relay-inventory"),
                new File(logs, "system-outbox-relay-inventory.log"));
        // order-service last: its demo page reads the others, at the ports they were given.
        Map<String, String> orderService = SystemFixture.traced(SystemFixture.orderService(), traces, "order-service");
        orderService.put("DEMO_ENABLED", "true");
        orderService.put("DEMO_INVENTORY_URL", "http://127.0.0.1:" + inventory.port());
        orderService.put("DEMO_OUTBOX_RELAY_URL", "http://127.0.0.1:" + relay.port());
        orderService.put("DEMO_OUTBOX_RELAY_INVENTORY_URL", "http://127.0.0.1:" + replyRelay.port());
        orders = ServiceProcess.start(SystemFixture.packaged("order-service"), orderService,
                new File(logs, "system-order-service.log"));
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
        if (collector != null) {
            collector.close();
        }
    }

    /**
     * One order, one trace, every hop a child of the one before: order-service's POST (a child of the
     * client's span) → outbox-relay's publish → inventory-service's inbox → outbox-relay-inventory's
     * publish of the reply → order-service's inbox. The trace crosses the WAL twice: the outbox rows
     * carry it.
     */
    @Test
    @Order(10)
    void oneOrderIsOneTraceThroughEveryHopAndBack() throws Exception {
        String traceId = UUID.randomUUID().toString().replace("-", "");
        String clientSpan = "00f067aa0ba902b7";
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(system.orderService().resolve("/orders"))
                .header("Content-Type", "application/json").header("traceparent", "00-" + traceId + "-" + clientSpan + "-01")
                .POST(HttpRequest.BodyPublishers.ofString("{\"customerId\": \"traced\", \"lines\": [{\"sku\": \"SKU-PEAR\", \"quantity\": 1}]}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
        UUID order = UUID.fromString(JSON.readTree(response.body()).get("id").asText());
        await().atMost(Duration.ofSeconds(60)).until(() -> !"PENDING".equals(statusOf(order)));

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            List<OtlpReceiver.ReceivedSpan> trace = collector.trace(traceId);
            OtlpReceiver.ReceivedSpan post = only(trace, "order-service", clientSpan);
            OtlpReceiver.ReceivedSpan published = only(trace, "outbox-relay", post.spanId());
            assertThat(published.name()).isEqualTo("orders publish");
            OtlpReceiver.ReceivedSpan applied = only(trace, "inventory-service", published.spanId());
            assertThat(applied.name()).isEqualTo("inventory.orders process");
            OtlpReceiver.ReceivedSpan reply = only(trace, "outbox-relay-inventory", applied.spanId());
            assertThat(reply.name()).isEqualTo("inventory publish");
            OtlpReceiver.ReceivedSpan decided = only(trace, "order-service", reply.spanId());
            assertThat(decided.name()).isEqualTo("order.inventory-replies process");
        });
    }

    /**
     * The dashboard of the observability profile (deploy/observability) reads only metrics that the
     * services publish: every name in its queries is on one of the four /q/metrics pages, after traffic.
     */
    @Test
    @Order(11)
    void theDashboardQueriesOnlyMetricsTheServicesPublish() throws Exception {
        StringBuilder pages = new StringBuilder();
        for (ServiceProcess service : List.of(orders, inventory, relay, replyRelay)) {
            pages.append(HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + service.port() + "/q/metrics"))
                            .header("Authorization", OperationsAuth.monitor()).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
        }
        JsonNode dashboard = JSON.readTree(SystemFixture.ROOT.resolve("deploy/observability/grafana/dashboards/pipeline.json").toFile());
        Set<String> used = new java.util.TreeSet<>();
        Pattern metric = Pattern.compile("\\b(?:orders|outbox|inbox)_[a-z0-9_]+");
        dashboard.get("panels").forEach(panel -> panel.get("targets").forEach(target -> {
            Matcher name = metric.matcher(target.get("expr").asText());
            while (name.find()) {
                used.add(name.group());
            }
        }));
        assertThat(used).as("metrics the dashboard reads").hasSizeGreaterThan(10);
        assertThat(used).allSatisfy(name -> assertThat(pages.toString()).as("published by a service")
                .containsPattern("(?m)^" + name + "[{ ]"));
    }

    /**
     * The demo page in a real browser (Debian's Chromium, headless, through its driver): it loads and
     * shows the stock; "Place order" shows the order decided and the stock reserved; "Republish" shows a
     * duplicate absorbed; "Send a poison message" shows a dead letter with its reason. The fault controls
     * are the separate localhost process deploy/local/demo runs, here in the test. Screenshots go to
     * target/demo-screenshots.
     */
    @Test
    @Order(12)
    void theDemoPageShowsAnOrderAppliedADuplicateAbsorbedAndADeadLetter() throws Exception {
        Path screenshots = Files.createDirectories(Path.of("target", "demo-screenshots"));
        try (DemoControls controls = DemoControls.start(0, system.orders(), system.broker(), null)) {
            // An order before the page opens: the database counts it, the page's figures must not.
            UUID before = place("SKU-APPLE");
            await().atMost(Duration.ofSeconds(30)).until(() -> "CONFIRMED".equals(statusOf(before)));
            WebDriver browser = DemoBrowser.open();
            try {
                browser.get("http://127.0.0.1:" + orders.port() + "/demo/?controls=" + controls.uri());
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions()
                        .until(() -> browser.findElements(By.cssSelector("#stock-rows tr")).size() >= 5);
                assertThat(browser.findElements(By.cssSelector("#health li.up"))).as("every service healthy").hasSize(4);
                DemoBrowser.screenshot(browser, screenshots.resolve("1-loaded.png"));

                // Place an order for a product that has stock; it turns CONFIRMED and the stock moves.
                String sku = await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> browser
                        .findElements(By.cssSelector("#stock-rows tr")).stream()
                        .filter(row -> Integer.parseInt(row.findElements(By.tagName("td")).get(3).getText()) >= 2)
                        .findFirst().map(row -> row.getAttribute("data-sku")), java.util.Optional::isPresent).orElseThrow();
                int reservedBefore = look(() -> reserved(browser, sku));
                new Select(browser.findElement(By.id("sku"))).selectByValue(sku);
                WebElement quantity = browser.findElement(By.id("quantity"));
                quantity.clear();
                quantity.sendKeys("2");
                browser.findElement(By.id("place-order")).click();
                await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("placed")).getText().contains("placed"));
                String shortId = browser.findElement(By.id("placed")).getText().split(" ")[1];
                // The page redraws every second: an element found may be gone when read, so each look is retried.
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> assertThat(browser.findElement(
                        By.cssSelector("#order-rows tr[data-order^='" + shortId + "'] td.status")).getText()).isEqualTo("CONFIRMED"));
                await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> reserved(browser, sku) == reservedBefore + 2);
                // The flow's figures count one span alike, since the page opened (not the database's lifetime
                // beside counters since each process started): the one order, once at every hop.
                await().atMost(Duration.ofSeconds(10)).ignoreExceptions().untilAsserted(() -> assertThat(Stream.of(
                        "fig-placed", "fig-published", "fig-applied", "fig-replies").map(id -> browser.findElement(By.id(id)).getText()))
                        .as("orders placed, events published, events applied, replies applied").containsExactly("1", "1", "1", "1"));
                DemoBrowser.screenshot(browser, screenshots.resolve("2-order-applied.png"));

                // Republish it: a duplicate absorbed, and the stock stays.
                await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElement(By.id("republish")).isDisplayed());
                assertThat(browser.findElement(By.id("restart-broker")).isDisplayed()).as("no broker restart offered here").isFalse();
                int duplicatesBefore = look(() -> Integer.parseInt(browser.findElement(By.id("fig-duplicates")).getText()));
                browser.findElement(By.id("republish")).click();
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() ->
                        Integer.parseInt(browser.findElement(By.id("fig-duplicates")).getText()) > duplicatesBefore);
                await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(() -> {
                    assertThat(browser.findElement(By.id("events")).getText()).contains("duplicate absorbed");
                    assertThat(reserved(browser, sku)).as("the duplicate reserved nothing").isEqualTo(reservedBefore + 2);
                });
                DemoBrowser.screenshot(browser, screenshots.resolve("3-duplicate-absorbed.png"));

                // A poison message: it shows in the dead letters, with its reason.
                browser.findElement(By.id("poison")).click();
                await().atMost(Duration.ofSeconds(30)).until(() -> browser.findElement(By.id("control-result")).getText().contains("sent"));
                String poisonId = browser.findElement(By.id("control-result")).getText().split(" ")[2];
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> assertThat(browser.findElement(
                        By.cssSelector("#dead-letter-list li[data-message-id='" + poisonId + "']")).getText())
                        .contains("inventory-service dead-lettered " + poisonId + ":").containsIgnoringCase("json"));
                DemoBrowser.screenshot(browser, screenshots.resolve("4-dead-letter.png"));
            } finally {
                browser.quit();
            }
        }
    }

    /** A value read off the page, read again if the page redrew it under the reader. */
    private static <T> T look(java.util.concurrent.Callable<T> read) {
        return await().atMost(Duration.ofSeconds(5)).ignoreExceptions().until(read, value -> true);
    }

    private static int reserved(WebDriver browser, String sku) {
        return Integer.parseInt(browser.findElement(By.cssSelector("#stock-rows tr[data-sku='" + sku + "']"))
                .findElements(By.tagName("td")).get(2).getText());
    }

    /** The one span of {@code service} in the trace whose parent is {@code parentSpanId}. */
    private static OtlpReceiver.ReceivedSpan only(List<OtlpReceiver.ReceivedSpan> trace, String service, String parentSpanId) {
        List<OtlpReceiver.ReceivedSpan> found = trace.stream()
                .filter(span -> span.service().equals(service) && span.parentSpanId().equals(parentSpanId)).toList();
        assertThat(found).as("spans of %s under %s in %s", service, parentSpanId, trace).hasSize(1);
        return found.get(0);
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

    /**
     * order-service's OpenAPI document is one a client can be generated from: the Java client generated
     * from it at build time (openapi-generator, this module's pom) places an order, reads it until inventory
     * decided, learns a bad request's field from the problem document, and meets the operations' door. The
     * document the running service serves is the one the build wrote, which .ci/run lints.
     */
    @Test
    @Order(13)
    void aClientGeneratedFromTheOpenApiDocumentPlacesAnOrder() throws Exception {
        JsonNode served = getJson(system.orderService().resolve("/q/openapi?format=json"));
        assertThat(served).as("the served document is the linted one")
                .isEqualTo(JSON.readTree(SystemFixture.ROOT.resolve("order-service/target/openapi/openapi.json").toFile()));

        ApiClient client = new ApiClient(HttpClient.newBuilder(), ApiClient.createDefaultObjectMapper(),
                system.orderService().toString().replaceAll("/$", ""));
        OrdersApi ordersApi = new OrdersApi(client);
        String key = "generated-client-" + UUID.randomUUID();
        PlaceOrderRequest request = new PlaceOrderRequest().customerId("generated-client")
                .addLinesItem(new PlaceOrderLine().sku("SKU-PEAR").quantity(2));
        ApiResponse<OrderView> first = ordersApi.placeOrderWithHttpInfo(request, key);
        assertThat(first.getStatusCode()).isEqualTo(201);
        OrderView order = first.getData();
        assertThat(order.getStatus()).isEqualTo(dev.outboxinbox.system.client.model.OrderStatus.PENDING);
        assertThat(order.getLines()).singleElement().satisfies(line -> {
            assertThat(line.getSku()).isEqualTo("SKU-PEAR");
            assertThat(line.getQuantity()).isEqualTo(2);
        });
        ApiResponse<OrderView> replay = ordersApi.placeOrderWithHttpInfo(request, key);
        assertThat(replay.getData().getId()).as("the same key and body: the same order").isEqualTo(order.getId());
        assertThat(replay.getHeaders().get("idempotent-replayed")).containsExactly("true");
        await().atMost(Duration.ofSeconds(30)).until(() ->
                ordersApi.getOrder(order.getId()).getStatus() == dev.outboxinbox.system.client.model.OrderStatus.CONFIRMED);

        ApiException invalid = catchThrowableOfType(ApiException.class, () -> ordersApi.placeOrder(
                new PlaceOrderRequest().customerId("generated-client").addLinesItem(new PlaceOrderLine().sku("SKU-PEAR").quantity(0)), null));
        assertThat(invalid.getCode()).isEqualTo(400);
        Problem problem = ApiClient.createDefaultObjectMapper().readValue(invalid.getResponseBody(), Problem.class);
        assertThat(problem.getErrors()).extracting(FieldError::getField).containsExactly("lines[0].quantity");
        ApiException unknown = catchThrowableOfType(ApiException.class, () -> ordersApi.getOrder(UUID.randomUUID()));
        assertThat(unknown.getCode()).isEqualTo(404);

        DeadLettersApi deadLetters = new DeadLettersApi(client);
        assertThat(catchThrowableOfType(ApiException.class, () -> deadLetters.deadLetterSummary(null)).getCode()).isEqualTo(401);
        assertThat(deadLetters.deadLetterSummary(null, Map.of("Authorization", OperationsAuth.monitor())).getQueue())
                .as("the service's one channel, unnamed").isEqualTo("order.inventory-replies.dead-letter");
        assertThat(deadLetters.deadLetterSummary("inventory-replies", Map.of("Authorization", OperationsAuth.monitor())).getQueue())
                .isEqualTo("order.inventory-replies.dead-letter");
        ApiException noSuchChannel = catchThrowableOfType(ApiException.class,
                () -> deadLetters.deadLetterSummary("partings", Map.of("Authorization", OperationsAuth.monitor())));
        assertThat(noSuchChannel.getCode()).isEqualTo(400);
        assertThat(noSuchChannel.getResponseHeaders().firstValue("Content-Type")).hasValueSatisfying(type ->
                assertThat(type).startsWith("application/problem+json"));
        assertThat(noSuchChannel.getResponseBody()).contains("no inbox channel 'partings'");
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

    /**
     * A cancellation through every hop and back: POST /orders/{id}/cancel → CANCELLING and OrderCancelled in one
     * transaction → relay → inventory releases what the order reserved, once → its reply → order-service, CANCELLED.
     * Asked again, the same order, nothing written; a rejected order cannot be cancelled (409, problem+json).
     */
    @Test
    @Order(7)
    void aConfirmedOrderCancelledReleasesItsStockOnceAndEndsCancelled() throws Exception {
        UUID apple = place("SKU-APPLE");
        UUID durian = place("SKU-DURIAN");
        await().atMost(Duration.ofSeconds(30)).until(() -> "CONFIRMED".equals(statusOf(apple)));
        await().atMost(Duration.ofSeconds(30)).until(() -> "REJECTED".equals(statusOf(durian)));
        int reservedBefore = stock().get("SKU-APPLE");
        long cancellationsBefore = count(system.orders(), "SELECT count(*) FROM outbox WHERE type = 'OrderCancelled'");

        HttpResponse<String> first = cancel(apple);

        assertThat(first.statusCode()).as(first.body()).isEqualTo(202);
        assertThat(JSON.readTree(first.body()).get("status").asText()).isEqualTo("CANCELLING");
        await().atMost(Duration.ofSeconds(30)).until(() -> "CANCELLED".equals(statusOf(apple)));
        JsonNode reservation = getJson(system.inventoryService().resolve("/orders/" + apple + "/reservation"));
        assertThat(reservation.get("cancelledAt").isNull()).as("cancelled in inventory: %s", reservation).isFalse();
        assertThat(reservation.get("released")).as("released what it reserved: %s", reservation).hasSize(1);
        assertThat(reservation.get("released").get(0).get("sku").asText()).isEqualTo("SKU-APPLE");
        assertThat(reservation.get("released").get(0).get("quantity").asInt()).isOne();
        assertThat(stock().get("SKU-APPLE")).as("SKU-APPLE reserved after the release").isEqualTo(reservedBefore - 1);

        HttpResponse<String> again = cancel(apple);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(count(system.orders(), "SELECT count(*) FROM outbox WHERE type = 'OrderCancelled'"))
                .as("one OrderCancelled, however often it is asked").isEqualTo(cancellationsBefore + 1);

        HttpResponse<String> rejected = cancel(durian);
        assertThat(rejected.statusCode()).as(rejected.body()).isEqualTo(409);
        assertThat(rejected.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("application/problem+json"));
        assertThat(JSON.readTree(rejected.body()).get("detail").asText()).contains("inventory rejected this order");
        assertThat(stock().get("SKU-APPLE")).as("released once").isEqualTo(reservedBefore - 1);
    }

    private static HttpResponse<String> cancel(UUID order) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(system.orderService().resolve("/orders/" + order + "/cancel"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
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
        String metrics = HTTP.send(HttpRequest.newBuilder(service.resolve("/q/metrics"))
                .header("Authorization", OperationsAuth.monitor()).build(),
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
