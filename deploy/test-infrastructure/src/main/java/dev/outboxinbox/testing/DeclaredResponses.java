package dev.outboxinbox.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.restassured.RestAssured;
import io.restassured.filter.Filter;
import io.restassured.filter.FilterContext;
import io.restassured.response.Response;
import io.restassured.specification.FilterableRequestSpecification;
import io.restassured.specification.FilterableResponseSpecification;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Holds a service's OpenAPI document to what its tests see: every answer a test gets from an operation
 * of the document (its method and path template) must have its status declared there, or the test
 * fails, naming the operation and the status. A client generated from the document then knows every
 * answer the tests know of. Paths the document does not describe ({@code /q/*}, an unknown path, a
 * method the path lacks) are not operations and are let through. On a service's test annotation:
 * {@code @ExtendWith(DeclaredResponses.class)}; it reads {@code /q/openapi} of the service once. The filter is
 * RestAssured's global state: once installed it checks every request of the test JVM (each service's tests
 * run in a JVM of their own, every class of them under that annotation).
 */
public final class DeclaredResponses implements Filter, BeforeAllCallback {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final Map<String, JsonNode> DOCUMENTS = new ConcurrentHashMap<>();
    private static volatile boolean installed;

    @Override
    public void beforeAll(ExtensionContext context) {
        synchronized (DeclaredResponses.class) {
            if (!installed) {
                RestAssured.filters(new DeclaredResponses());
                installed = true;
            }
        }
    }

    @Override
    public Response filter(FilterableRequestSpecification request, FilterableResponseSpecification response,
                           FilterContext context) {
        Response answer = context.next(request, response);
        URI uri = URI.create(request.getURI());
        if (uri.getRawPath().startsWith("/q/")) {
            return answer;
        }
        JsonNode document = DOCUMENTS.computeIfAbsent(uri.getScheme() + "://" + uri.getRawAuthority(), DeclaredResponses::read);
        String method = request.getMethod().toLowerCase(Locale.ROOT);
        operation(document, method, uri.getRawPath()).ifPresent(operation -> {
            JsonNode responses = operation.getValue().path("responses");
            String status = String.valueOf(answer.statusCode());
            if (!responses.has(status) && !responses.has(status.charAt(0) + "XX") && !responses.has("default")) {
                throw new AssertionError("%s %s answered %s, which its OpenAPI document does not declare (it declares %s): "
                        .formatted(method.toUpperCase(), operation.getKey(), status, names(responses))
                        + "add an @APIResponse for it, with its problem+json schema if it is an error");
            }
        });
        return answer;
    }

    /** The operation whose path template matches, the one with the most literal characters first. */
    static Optional<Map.Entry<String, JsonNode>> operation(JsonNode document, String method, String path) {
        Map.Entry<String, JsonNode> best = null;
        int bestLiterals = -1;
        for (Iterator<Map.Entry<String, JsonNode>> paths = document.path("paths").fields(); paths.hasNext(); ) {
            Map.Entry<String, JsonNode> template = paths.next();
            if (!template.getValue().has(method) || !matches(template.getKey(), path)) {
                continue;
            }
            int literals = template.getKey().replaceAll("\\{[^}]*}", "").length();
            if (literals > bestLiterals) {
                best = Map.entry(template.getKey(), template.getValue().get(method));
                bestLiterals = literals;
            }
        }
        return Optional.ofNullable(best);
    }

    private static boolean matches(String template, String path) {
        StringBuilder regex = new StringBuilder();
        for (String part : template.split("((?=\\{)|(?<=}))")) {
            regex.append(part.startsWith("{") ? "[^/]+" : Pattern.quote(part));
        }
        return path.replaceAll("(?<=.)/$", "").matches(regex.toString());
    }

    private static String names(JsonNode responses) {
        StringBuilder names = new StringBuilder();
        responses.fieldNames().forEachRemaining(name -> names.append(names.isEmpty() ? "" : ", ").append(name));
        return names.toString();
    }

    private static JsonNode read(String base) {
        try {
            HttpResponse<String> served = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/q/openapi?format=json"))
                    .header("Accept", "application/json").build(), HttpResponse.BodyHandlers.ofString());
            if (served.statusCode() != 200) {
                throw new IllegalStateException(base + "/q/openapi answered " + served.statusCode());
            }
            return JSON.readTree(served.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
