package dev.outboxinbox.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import java.io.IOException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/**
 * What a broker administrator does through the management API, for tests that need a broker that
 * says no: a user of the test's own with narrow permissions in the fixture's virtual host, the
 * connections it holds, a queue's message count (read without looking at the messages).
 */
final class BrokerAdmin {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    private BrokerAdmin() {
    }

    /** (Re)creates a user with these permissions (regular expressions) in the fixture's virtual host. */
    static void user(String name, String password, String configure, String write, String read) {
        call("PUT", "/api/users/" + encode(name), JSON.createObjectNode().put("password", password).put("tags", "").toString());
        permissions(name, configure, write, read);
    }

    static void permissions(String user, String configure, String write, String read) {
        call("PUT", "/api/permissions/" + encode(RelayFixture.VHOST) + "/" + encode(user),
                JSON.createObjectNode().put("configure", configure).put("write", write).put("read", read).toString());
    }

    static void deleteUser(String name) {
        call("DELETE", "/api/users/" + encode(name), null);
    }

    /** The connections the broker holds for this user, in any virtual host. */
    static int connectionsOf(String user) {
        JsonNode connections = call("GET", "/api/connections?columns=user,name", null);
        int count = 0;
        for (JsonNode connection : connections) {
            if (user.equals(connection.path("user").asText())) {
                count++;
            }
        }
        return count;
    }

    /** Messages in a queue of the fixture's virtual host, ready and unacknowledged. */
    static long messages(String queue) {
        return call("GET", "/api/queues/" + encode(RelayFixture.VHOST) + "/" + encode(queue) + "?columns=messages", null)
                .path("messages").asLong(-1);
    }

    private static JsonNode call(String method, String path, String json) {
        RabbitMqEndpoint broker = RelayFixture.rabbitMq();
        HttpRequest request = HttpRequest.newBuilder(broker.management().resolve(path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        (broker.user() + ":" + broker.password()).getBytes(StandardCharsets.UTF_8)))
                .header("Content-Type", "application/json")
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json))
                .build();
        try {
            HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() >= 300 && !(method.equals("DELETE") && response.statusCode() == 404)) {
                throw new IllegalStateException(method + " " + path + " answered " + response.statusCode() + ": " + response.body());
            }
            return response.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(response.body());
        } catch (IOException e) {
            throw new IllegalStateException(method + " " + path + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + method + " " + path, e);
        }
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
