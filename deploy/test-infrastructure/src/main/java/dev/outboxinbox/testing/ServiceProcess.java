package dev.outboxinbox.testing;

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
 * A packaged service ({@code target/quarkus-app/quarkus-run.jar}) run as an operating-system
 * process, to be stopped (SIGTERM) or killed (SIGKILL) for real. It runs with the JVM options the
 * services are deployed with: a 512 MiB heap and the serial collector. Extra options for one run
 * (a flight recording, say) come from the environment variable {@code SERVICE_JAVA_OPTS}.
 */
public final class ServiceProcess {

    private final Process process;
    private final int port;

    private ServiceProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    public static ServiceProcess start(Path quarkusApp, Map<String, String> environment, File log) throws IOException {
        return start(Path.of(System.getProperty("java.home"), "bin", "java"), quarkusApp, environment, log);
    }

    /** As {@link #start(Path, Map, File)}, on another JVM ({@code java} is its launcher). */
    public static ServiceProcess start(Path java, Path quarkusApp, Map<String, String> environment, File log) throws IOException {
        Path jar = quarkusApp.resolve("quarkus-run.jar");
        if (!jar.toFile().exists()) {
            throw new IllegalStateException(jar + " is missing: package the service first");
        }
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        List<String> command = new ArrayList<>(List.of(
                java.toString(), "-Xmx512m", "-XX:+UseSerialGC"));
        String extra = System.getenv("SERVICE_JAVA_OPTS");
        if (extra != null && !extra.isBlank()) {
            command.addAll(List.of(extra.trim().split("\\s+")));
        }
        command.addAll(List.of("-jar", jar.toString()));
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log));
        // The credentials of its operations endpoints and /q/metrics (OperationsAuth), unless the test sets its own.
        builder.environment().putAll(OperationsAuth.environment());
        builder.environment().putAll(environment);
        builder.environment().put("QUARKUS_HTTP_PORT", String.valueOf(port));
        return new ServiceProcess(builder.start(), port);
    }

    /** Quarkus configuration keys as the environment variables a deployed service reads. */
    public static Map<String, String> asEnvironment(Map<String, String> config) {
        Map<String, String> env = new java.util.LinkedHashMap<>();
        config.forEach((key, value) -> env.put(key.toUpperCase().replace('.', '_').replace('-', '_'), value));
        return env;
    }

    /** The operating system's id of the process (its memory is read from /proc). */
    public long pid() {
        return process.pid();
    }

    public int port() {
        return port;
    }

    public ServiceProcess awaitReady(Duration atMost) {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/health/ready")).build();
        try {
            await().atMost(atMost).ignoreExceptions().until(() -> {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the service exited with " + process.exitValue());
                }
                return http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            });
        } catch (RuntimeException notReady) {
            // A failed test must not leave the process behind, holding its port, slot or queue.
            process.destroyForcibly();
            throw notReady;
        }
        return this;
    }

    /** SIGTERM, as an orchestrator stops a container: shutdown hooks run. @return the exit code */
    public int stopGracefully() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("the service did not stop within 60 s of SIGTERM");
        }
        return process.exitValue();
    }

    /** SIGKILL: no shutdown hook, nothing finished. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }
}
