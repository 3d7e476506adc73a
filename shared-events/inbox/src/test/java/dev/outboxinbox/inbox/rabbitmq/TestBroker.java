package dev.outboxinbox.inbox.rabbitmq;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.inbox.InboxHeaders;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/** The broker as the tests see it from outside: publishing greetings, reading a queue, and the management API. */
final class TestBroker {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String virtualHost;

    TestBroker(String virtualHost) {
        this.virtualHost = virtualHost;
    }

    void publishGreeting(String messageId, String text) throws Exception {
        publish(messageId, "Greeted", text.getBytes(StandardCharsets.UTF_8));
    }

    void publish(String messageId, String type, byte[] body) throws Exception {
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(messageId).type(type)
                    .headers(Map.of(InboxHeaders.SCHEMA_VERSION, 1)).deliveryMode(2).build();
            channel.basicPublish("greetings", "Greeted", true, properties, body);
            channel.waitForConfirmsOrDie(10_000);
        }
    }

    /** Takes every message of {@code queue} (acked: they are gone), in the queue's order. */
    List<GetResponse> take(String queue) throws Exception {
        List<GetResponse> taken = new ArrayList<>();
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            for (GetResponse response; (response = channel.basicGet(queue, true)) != null; ) {
                taken.add(response);
            }
        }
        return taken;
    }

    Connection connection() throws Exception {
        return RealServices.rabbitMq().connectionFactory(virtualHost).newConnection("test");
    }

    /** The AMQP connections the broker holds in this virtual host, by the management API. */
    int connections() throws Exception {
        return management("GET", "/api/vhosts/" + encode(virtualHost) + "/connections").size();
    }

    /** Those of them opened under {@code name} (a consumer opens its connection under its consumer name). */
    int connections(String name) throws Exception {
        int count = 0;
        for (JsonNode connection : management("GET", "/api/vhosts/" + encode(virtualHost) + "/connections")) {
            if (name.equals(connection.path("user_provided_name").asText(null))) {
                count++;
            }
        }
        return count;
    }

    void deleteQueue(String queue) throws Exception {
        management("DELETE", "/api/queues/" + encode(virtualHost) + "/" + encode(queue));
    }

    private static JsonNode management(String method, String path) throws Exception {
        RabbitMqEndpoint broker = RealServices.rabbitMq();
        HttpRequest request = HttpRequest.newBuilder(broker.management().resolve(path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        (broker.user() + ":" + broker.password()).getBytes(StandardCharsets.UTF_8)))
                .method(method, HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException(method + " " + path + " answered " + response.statusCode() + ": " + response.body());
        }
        return response.body().isEmpty() ? JSON.nullNode() : JSON.readTree(response.body());
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
