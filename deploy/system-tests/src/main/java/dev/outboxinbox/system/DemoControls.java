package dev.outboxinbox.system;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.Topology;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

/**
 * The demo page's fault controls, in a process of their own that listens on 127.0.0.1 only: republish
 * the newest delivered event (the duplicate a relay crash makes), send a poison message, and, where a
 * way to restart the broker is given (deploy/local), restart it. Never part of a service, of compose or
 * of any default: deploy/local/demo starts it, with the broker administrator's credentials from .env.
 * Only pages served from this machine may use it: a request whose {@code Origin} is not a loopback
 * address is refused, so a web site open in the same browser cannot inject faults.
 */
public final class DemoControls implements AutoCloseable {

    /** Restarts the broker and returns once it takes connections again. */
    @FunctionalInterface
    public interface BrokerRestart {
        void restart() throws Exception;
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern LOOPBACK_ORIGIN = Pattern.compile("https?://(localhost|127\\.0\\.0\\.1|\\[::1])(:\\d+)?");

    private final HttpServer server;
    private final Database orders;
    private final Broker broker;
    private final BrokerRestart restart;

    private DemoControls(HttpServer server, Database orders, Broker broker, BrokerRestart restart) {
        this.server = server;
        this.orders = orders;
        this.broker = broker;
        this.restart = restart;
    }

    /**
     * @param port    on 127.0.0.1; 0 for any free one
     * @param restart null where the broker cannot be restarted from here (the control is then not offered)
     */
    public static DemoControls start(int port, Database orders, Broker broker, BrokerRestart restart) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        DemoControls controls = new DemoControls(server, orders, broker, restart);
        server.createContext("/", controls::handle);
        server.setExecutor(Executors.newFixedThreadPool(2));
        server.start();
        return controls;
    }

    public URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    @Override
    public void close() {
        server.stop(0);
    }

    /** What is offered: the page shows a button for each. */
    public List<String> offered() {
        List<String> offered = new ArrayList<>(List.of("republish", "poison"));
        if (restart != null) {
            offered.add("restart-broker");
        }
        return offered;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String origin = exchange.getRequestHeaders().getFirst("Origin");
            if (origin != null && !LOOPBACK_ORIGIN.matcher(origin).matches()) {
                reply(exchange, 403, Map.of("error", "only pages served from this machine may use the demo controls"), null);
                return;
            }
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getPath();
            try {
                if (method.equals("GET") && path.equals("/controls")) {
                    reply(exchange, 200, Map.of("controls", offered()), origin);
                } else if (method.equals("POST") && path.equals("/republish")) {
                    reply(exchange, 200, Map.of("done", republishNewest()), origin);
                } else if (method.equals("POST") && path.equals("/poison")) {
                    reply(exchange, 200, Map.of("done", sendPoison()), origin);
                } else if (method.equals("POST") && path.equals("/restart-broker") && restart != null) {
                    restart.restart();
                    reply(exchange, 200, Map.of("done", "the broker was restarted; the services reconnect by themselves"), origin);
                } else {
                    reply(exchange, 404, Map.of("error", "no such control: " + method + " " + path), origin);
                }
            } catch (Exception e) {
                reply(exchange, 500, Map.of("error", String.valueOf(e.getMessage())), origin);
            }
        }
    }

    private String republishNewest() throws Exception {
        List<Replay.OutboxEvent> newest = Replay.newest(orders, 1);
        if (newest.isEmpty()) {
            return "nothing to republish yet: place an order first";
        }
        Replay.publish(broker, newest);
        return "event " + newest.get(0).id() + " (order " + newest.get(0).aggregateId().substring(0, 8)
                + ") published again, as a relay crash would";
    }

    /** Not JSON at all: the consumer's door rejects it, and it is dead-lettered with the reason. */
    private String sendPoison() throws Exception {
        String id = "poison-" + UUID.randomUUID();
        try (Connection connection = broker.connectionFactory().newConnection("demo-poison");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                    .messageId(id).type(OrderCreated.TYPE).contentType(MessageHeaders.CONTENT_TYPE).deliveryMode(2)
                    .headers(Map.of(MessageHeaders.SCHEMA_VERSION, OrderCreated.SCHEMA_VERSION)).build();
            channel.basicPublish(Topology.ORDERS_EXCHANGE, OrderCreated.TYPE, true, properties,
                    "{\"orderId\": ".getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(10_000);
        }
        return "poison message " + id + " sent (its body is not JSON)";
    }

    private static void reply(HttpExchange exchange, int status, Map<String, ?> body, String origin) throws IOException {
        byte[] bytes = JSON.writeValueAsBytes(body);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.getResponseHeaders().add("Cache-Control", "no-store");
        if (origin != null) {
            exchange.getResponseHeaders().add("Access-Control-Allow-Origin", origin);
            exchange.getResponseHeaders().add("Vary", "Origin");
        }
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
    }
}
