package dev.outboxinbox.relay;

import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The packaged relay ({@code target/quarkus-app}) run as an operating-system process, to be stopped
 * or killed for real, with the JVM options it is deployed with (Dockerfile, deploy/local): a 512 MiB
 * heap and the serial collector, which leaves both cores of a small machine to the work.
 */
final class RelayProcess {

    private final Process process;
    private final int port;

    private RelayProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    static RelayProcess start(Map<String, String> config, String logName) throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Path jar = Path.of("target", "quarkus-app", "quarkus-run.jar");
        if (!jar.toFile().exists()) {
            throw new IllegalStateException(jar + " is missing: run the integration tests with 'verify', after 'package'");
        }
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m", "-XX:+UseSerialGC"));
        // Extra JVM options for the relay alone, e.g. a flight recording during a benchmark.
        String extra = System.getenv("RELAY_JAVA_OPTS");
        if (extra != null && !extra.isBlank()) {
            command.addAll(List.of(extra.trim().split("\\s+")));
        }
        command.addAll(List.of("-jar", jar.toString()));
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File("target", logName)));
        builder.environment().putAll(RelayFixture.asEnvironment(config));
        builder.environment().put("QUARKUS_HTTP_PORT", String.valueOf(port));
        return new RelayProcess(builder.start(), port);
    }

    void awaitReady() {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/health/ready")).build();
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> {
            if (!process.isAlive()) {
                throw new IllegalStateException("relay exited with " + process.exitValue());
            }
            return http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        });
    }

    /** SIGTERM, as an orchestrator stops a container; the relay finishes the batch in hand. */
    int stopGracefully() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("relay did not stop within 60 s of SIGTERM");
        }
        return process.exitValue();
    }

    /** SIGKILL: no shutdown hook, no last commit. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }
}
