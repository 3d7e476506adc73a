package dev.outboxinbox.relay;

import dev.outboxinbox.testing.OperationsAuth;
import dev.outboxinbox.testing.ServiceProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The packaged relays a test starts, in a world {@link RelayFixture} prepares afresh before each test
 * (a test's own {@code @BeforeEach} runs after it and may change {@link #config()}). After each test
 * every relay it started is woken (a test may have frozen it) and killed; after the class, the slot
 * is dropped. Register it with {@code @RegisterExtension final RelayProcesses relays = new RelayProcesses();}.
 */
final class RelayProcesses implements BeforeEachCallback, AfterEachCallback, AfterAllCallback {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private Map<String, String> config;
    private final List<ServiceProcess> started = new ArrayList<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        config = RelayFixture.prepare();
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        for (ServiceProcess relay : started) {
            signal("CONT", relay);
            relay.kill();
        }
        started.clear();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        RelayFixture.dropSlot();
    }

    /** This test's relay configuration: what every relay it starts gets. */
    Map<String, String> config() {
        return config;
    }

    /** A relay with this test's configuration, logging to {@code target/<logName>}; not yet ready. */
    ServiceProcess start(String logName) throws IOException {
        return start(config, logName);
    }

    /** A relay under its own leadership name, logging to {@code target/<instance>.log}; not yet ready. */
    ServiceProcess startInstance(String instance) throws IOException {
        Map<String, String> own = new LinkedHashMap<>(config);
        own.put("relay.leadership.instance", instance);
        return start(own, instance + ".log");
    }

    private ServiceProcess start(Map<String, String> with, String logName) throws IOException {
        ServiceProcess relay = RelayProcess.start(with, logName);
        started.add(relay);
        return relay;
    }

    /** For a test that stopped a relay itself and checks how it ended. */
    void forget(ServiceProcess relay) {
        started.remove(relay);
    }

    /** {@code kill -<signal>} to the relay's process (STOP freezes it, CONT wakes it). */
    static void signal(String signal, ServiceProcess relay) {
        try {
            new ProcessBuilder("kill", "-" + signal, String.valueOf(relay.pid())).start().waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static HttpResponse<String> get(ServiceProcess relay, String path, Duration timeout) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + relay.port() + path)).timeout(timeout)
                        .header("Authorization", OperationsAuth.operator()).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The relay's readiness body; "" if it does not answer within 2 s. */
    static String health(ServiceProcess relay) {
        try {
            return get(relay, "/q/health/ready", Duration.ofSeconds(2)).body();
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** The relay's metrics, in Prometheus' text format. */
    static String metrics(ServiceProcess relay) throws IOException, InterruptedException {
        return get(relay, "/q/metrics", Duration.ofSeconds(5)).body();
    }
}
