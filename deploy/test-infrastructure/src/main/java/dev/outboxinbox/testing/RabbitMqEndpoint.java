package dev.outboxinbox.testing;

import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A RabbitMQ broker the tests may declare on, reached as a user with the administrator tag,
 * the means to stop and start it ({@link BrokerControl}), and its management API (for what AMQP
 * does not tell, such as a queue's unacknowledged messages).
 */
public record RabbitMqEndpoint(String host, int port, String user, String password, BrokerControl control, URI management) {

    public ConnectionFactory connectionFactory(String virtualHost) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }

    /**
     * The settings a consumer built on the inbox library reads ({@code rabbitmq-host}, …), pointing
     * at this broker and the given virtual host (recreated first, so nothing of an earlier run is left).
     */
    public Map<String, String> freshInboxBrokerConfig(String virtualHost) {
        recreateVirtualHost(virtualHost);
        return Map.of("rabbitmq-host", host, "rabbitmq-port", String.valueOf(port), "rabbitmq-username", user,
                "rabbitmq-password", password, "rabbitmq-virtual-host", virtualHost);
    }

    /**
     * Deletes and recreates a virtual host, so that queues and messages of earlier runs are gone.
     * Through the management API: each {@code rabbitmqctl} call starts an Erlang VM (most of a second),
     * and the tests recreate a virtual host for nearly every class.
     */
    public void recreateVirtualHost(String name) {
        deleteVirtualHost(name);
        management("PUT", "/api/vhosts/" + encode(name), "{}", 201, 204);
        management("PUT", "/api/permissions/" + encode(name) + "/" + encode(user),
                "{\"configure\":\".*\",\"write\":\".*\",\"read\":\".*\"}", 201, 204);
    }

    /** Deletes a virtual host with all its queues and messages, if it exists. */
    public void deleteVirtualHost(String name) {
        management("DELETE", "/api/vhosts/" + encode(name), null, 204, 404);
    }

    /**
     * A queue as the management API last sampled it (every few seconds): ready and unacknowledged messages,
     * and the messages acked on it since it was declared (one multiple ack counts each message it settles).
     */
    public record QueueCounts(long ready, long unacknowledged, long acked) {
    }

    public QueueCounts queueCounts(String virtualHost, String queue) {
        String body = management("GET", "/api/queues/" + encode(virtualHost) + "/" + encode(queue), null, 200);
        return new QueueCounts(number(body, "messages_ready"), number(body, "messages_unacknowledged"), number(body, "ack"));
    }

    /** A top-level or message_stats count; 0 where the broker has not sampled it yet. */
    private static long number(String json, String key) {
        Matcher matcher = Pattern.compile("\"" + key + "\":(\\d+)").matcher(json);
        return matcher.find() ? Long.parseLong(matcher.group(1)) : 0;
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private String management(String method, String path, String json, int... expected) {
        HttpRequest request = HttpRequest.newBuilder(management.resolve(path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8)))
                .header("Content-Type", "application/json")
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json))
                .build();
        HttpResponse<String> response;
        try {
            response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("RabbitMQ's management API at " + management + " is unreachable (" + method + " " + path
                    + "): is the rabbitmq_management plugin enabled? (deploy/local/prepare-services enables it)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + method + " " + path, e);
        }
        for (int status : expected) {
            if (response.statusCode() == status) {
                return response.body();
            }
        }
        throw new IllegalStateException("RabbitMQ's management API: " + method + " " + path + " answered " + response.statusCode()
                + ": " + response.body());
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
