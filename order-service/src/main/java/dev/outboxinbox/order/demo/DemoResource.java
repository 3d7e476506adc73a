package dev.outboxinbox.order.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.inbox.rabbitmq.DeadLetterRedelivery;
import dev.outboxinbox.inbox.rabbitmq.InboxConsumers;
import dev.outboxinbox.inbox.rabbitmq.RecentDeadLetters;
import dev.outboxinbox.order.domain.OrderService;
import dev.outboxinbox.order.replies.InventoryReplies;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.quarkus.logging.Log;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.eclipse.microprofile.openapi.annotations.Operation;

/**
 * The live demo page's data, in one read-only call: this service's orders, inventory's stock, what each
 * inbox applied, absorbed and dead-lettered (with reasons), each relay's lag, each service's health.
 * order-service serves the page ({@code /demo/}) because it is the system's front door and the one
 * service that sees an order at both ends (placed, then decided by inventory's reply); the rest it reads
 * from the other services' HTTP endpoints, never their databases. Nothing here writes, and nothing
 * here injects a fault: those controls live in a separate process on localhost (deploy/local/demo).
 */
@Path("/demo/state")
@Produces(MediaType.APPLICATION_JSON)
public class DemoResource {

    private static final Duration TIMEOUT = Duration.ofMillis(1500);
    /** A page polls every second; several open pages share one reading. */
    private static final Duration FRESH = Duration.ofMillis(500);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-z_]+)(?:\\{([^}]*)})? (\\S+)$");

    private final OrderService orders;
    private final MeterRegistry registry;
    private final InboxConsumers consumers;
    private final RecentDeadLetters recentDeadLetters;
    private final DemoConfig config;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
    private Map<String, Object> last;
    private Instant lastAt = Instant.EPOCH;

    DemoResource(OrderService orders, MeterRegistry registry, InboxConsumers consumers,
                 RecentDeadLetters recentDeadLetters, DemoConfig config) {
        this.orders = orders;
        this.registry = registry;
        this.consumers = consumers;
        this.recentDeadLetters = recentDeadLetters;
        this.config = config;
    }

    @GET
    @Operation(hidden = true) // the demo page's own, not an API for clients
    public synchronized Response state() {
        if (!config.enabled()) {
            throw new NotFoundException("The demo page is off here: DEMO_ENABLED=true turns it on (it shows anyone what"
                    + " the monitor may read; README, \"Operations\")");
        }
        if (last == null || Instant.now().isAfter(lastAt.plus(FRESH))) {
            last = read();
            lastAt = Instant.now();
        }
        return Response.ok(last).header("Cache-Control", "no-store").build();
    }

    private Map<String, Object> read() {
        CompletableFuture<String> inventoryMetrics = get(config.inventoryUrl(), "/q/metrics");
        CompletableFuture<String> stock = get(config.inventoryUrl(), "/products?limit=50");
        CompletableFuture<String> inventoryDeadLetters = get(config.inventoryUrl(), "/dead-letters/summary");
        CompletableFuture<String> relayMetrics = get(config.outboxRelayUrl(), "/q/metrics");
        CompletableFuture<String> replyRelayMetrics = get(config.outboxRelayInventoryUrl(), "/q/metrics");
        Map<String, CompletableFuture<String>> health = new LinkedHashMap<>();
        health.put("inventory-service", get(config.inventoryUrl(), "/q/health/ready"));
        health.put("outbox-relay", get(config.outboxRelayUrl(), "/q/health/ready"));
        health.put("outbox-relay-inventory", get(config.outboxRelayInventoryUrl(), "/q/health/ready"));

        Map<String, Object> state = new LinkedHashMap<>();
        state.put("at", Instant.now().toString());
        try {
            state.put("orders", Map.of("counts", orders.countsByStatus(), "newest", orders.newest(12)));
        } catch (RuntimeException databaseAway) {
            state.put("orders", null);
            state.put("ordersProblem", "order-service cannot read its database: " + databaseAway.getMessage());
        }
        state.put("stock", json(stock));

        Map<String, Object> inboxes = new LinkedHashMap<>();
        inboxes.put("inventory-service", inboxFromPage(text(inventoryMetrics), "inventory-service"));
        inboxes.put("order-service", inboxFromRegistry());
        state.put("inboxes", inboxes);

        Map<String, Object> dead = new LinkedHashMap<>();
        dead.put("inventory-service", json(inventoryDeadLetters));
        dead.put("order-service", ownDeadLetters());
        state.put("deadLetters", dead);

        Map<String, Object> relays = new LinkedHashMap<>();
        relays.put("outbox-relay", relay(text(relayMetrics)));
        relays.put("outbox-relay-inventory", relay(text(replyRelayMetrics)));
        state.put("relays", relays);

        Map<String, String> up = new LinkedHashMap<>();
        up.put("order-service", "UP");
        health.forEach((service, response) -> up.put(service, status(response)));
        state.put("health", up);
        return state;
    }

    private CompletableFuture<String> get(String base, String path) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(TIMEOUT);
        config.monitorPassword().ifPresent(password -> request.header("Authorization", "Basic "
                + Base64.getEncoder().encodeToString(("monitor:" + password).getBytes(StandardCharsets.UTF_8))));
        return http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString())
                .thenApply(response -> response.statusCode() + "\n" + response.body())
                .exceptionally(failure -> null);
    }

    /** The body of a 200 answer, or null (down, slow, or an error). */
    private static String text(CompletableFuture<String> response) {
        String answer = response.join();
        return answer != null && answer.startsWith("200\n") ? answer.substring(4) : null;
    }

    private static Object json(CompletableFuture<String> response) {
        String body = text(response);
        try {
            return body == null ? null : JSON.readTree(body);
        } catch (Exception e) {
            return null;
        }
    }

    /** UP, DOWN (it answered 503: not ready, and why is on its /q/health/ready) or UNREACHABLE. */
    private static String status(CompletableFuture<String> response) {
        String answer = response.join();
        if (answer == null) {
            return "UNREACHABLE";
        }
        return answer.startsWith("200\n") ? "UP" : "DOWN";
    }

    private static Map<String, Object> inboxFromPage(String page, String consumer) {
        Map<String, Object> inbox = new LinkedHashMap<>();
        if (page == null) {
            return inbox;
        }
        Matcher sample = SAMPLE.matcher(page);
        while (sample.find()) {
            String labels = sample.group(2) == null ? "" : sample.group(2);
            if (!labels.contains("consumer=\"" + consumer + "\"")) {
                continue;
            }
            double value = Double.parseDouble(sample.group(3));
            if (sample.group(1).equals("inbox_messages_total")) {
                inbox.put(label(labels, "outcome"), (long) value);
            } else if (sample.group(1).equals("inbox_commit_to_applied_seconds") && labels.contains("quantile")) {
                inbox.put("p" + Math.round(Double.parseDouble(label(labels, "quantile")) * 100) + "Ms", Math.round(value * 1000));
            }
        }
        return inbox;
    }

    private Map<String, Object> inboxFromRegistry() {
        Map<String, Object> inbox = new LinkedHashMap<>();
        for (String outcome : List.of("applied", "duplicate", "unchanged", "poison", "held")) {
            FunctionCounter counter = registry.find("inbox.messages").tag("outcome", outcome).functionCounter();
            inbox.put(outcome, counter == null ? 0 : (long) counter.count());
        }
        Timer timer = registry.find("inbox.commit.to.applied").timer();
        if (timer != null) {
            for (ValueAtPercentile percentile : timer.takeSnapshot().percentileValues()) {
                inbox.put("p" + Math.round(percentile.percentile() * 100) + "Ms", Math.round(percentile.value(TimeUnit.MILLISECONDS)));
            }
        }
        return inbox;
    }

    private Object ownDeadLetters() {
        DeadLetterRedelivery deadLetters;
        try {
            deadLetters = consumers.deadLetters(InventoryReplies.CHANNEL);
        } catch (IllegalArgumentException notOpenYet) {
            return Map.of("problem", notOpenYet.getMessage(), "recent", recentDeadLetters.list());
        }
        try {
            return Map.of("queue", deadLetters.deadLetterQueue(), "depth", deadLetters.depth(), "recent", recentDeadLetters.list());
        } catch (Exception e) {
            Log.debugf("dead-letter depth unreadable: %s", e);
            return Map.of("queue", deadLetters.deadLetterQueue(), "recent", recentDeadLetters.list());
        }
    }

    private static Map<String, Object> relay(String page) {
        Map<String, Object> relay = new LinkedHashMap<>();
        if (page == null) {
            return relay;
        }
        Matcher sample = SAMPLE.matcher(page);
        while (sample.find()) {
            double value = Double.parseDouble(sample.group(3));
            switch (sample.group(1)) {
                case "outbox_relay_events_published_total" -> relay.put("published", (long) value);
                case "outbox_relay_events_parked_total" -> relay.put("parked", (long) value);
                case "outbox_relay_slot_retained_wal_bytes" -> relay.put("retainedWalBytes", (long) value);
                case "outbox_relay_oldest_unpublished_age_seconds" -> relay.put("oldestUnpublishedSeconds", value);
                default -> { }
            }
        }
        return relay;
    }

    private static String label(String labels, String name) {
        Matcher value = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        return value.find() ? value.group(1) : "";
    }
}
