package dev.outboxinbox.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where each service's CPU goes: a JFR recording of the running processes ({@code jcmd JFR.start} and
 * {@code JFR.stop}, the JDK's {@code profile} settings: a Java stack sampled every 10 ms per running
 * thread), summed up by layer. A sample counts for the library of its innermost frame outside the JDK:
 * a {@code HashMap} lookup inside Hibernate counts for Hibernate, a socket write under the JDBC driver
 * for the driver. The recordings stay beside the report for JDK Mission Control ({@code jfr print} too).
 */
final class Hotspots {

    record Share(String name, double share) {
    }

    /**
     * @param samples  Java stack samples taken (threads running Java code)
     * @param layers   the layers' shares of them, largest first
     * @param methods  the innermost methods outside the JDK, largest first
     * @param gcPauseMs the collector's pauses in the recording, summed
     */
    record Profile(String service, long samples, List<Share> layers, List<Share> methods, double gcPauseMs, String recording) {
    }

    /** Package prefixes to layers; the first that matches names it. Anything else: its first two package names. */
    private static final Map<String, String> LAYERS = new LinkedHashMap<>();

    static {
        LAYERS.put("dev.outboxinbox.", "this project's code");
        LAYERS.put("org.postgresql.", "PostgreSQL JDBC driver");
        LAYERS.put("io.agroal.", "connection pool (Agroal)");
        LAYERS.put("org.hibernate.", "Hibernate ORM");
        LAYERS.put("io.quarkus.hibernate", "Hibernate ORM");
        LAYERS.put("com.arjuna.", "transactions (Narayana)");
        LAYERS.put("io.quarkus.narayana", "transactions (Narayana)");
        LAYERS.put("com.fasterxml.jackson.", "JSON (Jackson)");
        LAYERS.put("io.opentelemetry.", "OpenTelemetry");
        LAYERS.put("io.quarkus.opentelemetry", "OpenTelemetry");
        LAYERS.put("io.micrometer.", "Micrometer");
        LAYERS.put("io.quarkus.micrometer", "Micrometer");
        LAYERS.put("org.jboss.resteasy.", "REST (RESTEasy Reactive)");
        LAYERS.put("io.quarkus.resteasy", "REST (RESTEasy Reactive)");
        LAYERS.put("io.vertx.", "HTTP and I/O (Vert.x, Netty)");
        LAYERS.put("io.netty.", "HTTP and I/O (Vert.x, Netty)");
        LAYERS.put("io.quarkus.vertx", "HTTP and I/O (Vert.x, Netty)");
        LAYERS.put("com.rabbitmq.", "RabbitMQ client");
        LAYERS.put("io.debezium.", "Debezium");
        LAYERS.put("org.apache.kafka.", "Kafka Connect API (Debezium's runtime)");
        LAYERS.put("org.jboss.logmanager.", "logging");
        LAYERS.put("org.jboss.logging.", "logging");
        LAYERS.put("org.slf4j.", "logging");
        LAYERS.put("io.smallrye.", "SmallRye (config, context, Mutiny, reactive messaging)");
        LAYERS.put("io.quarkus.", "Quarkus and ArC");
        LAYERS.put("org.jboss.", "Quarkus and ArC");
    }

    private static final List<String> JDK = List.of("java.", "javax.", "jdk.", "sun.", "com.sun.");
    private static final String RECORDING = "bench-hotspots";

    private final Map<String, Long> pids;
    private final Path directory;

    private Hotspots(Map<String, Long> pids, Path directory) {
        this.pids = pids;
        this.directory = directory;
    }

    /** Starts a recording in each process; {@link #stop()} ends them and reads them. */
    static Hotspots start(Map<String, Long> pids, Path directory) throws IOException, InterruptedException {
        Files.createDirectories(directory);
        Hotspots hotspots = new Hotspots(pids, directory);
        Map<Long, List<String>> commands = new LinkedHashMap<>();
        for (Map.Entry<String, Long> service : pids.entrySet()) {
            Path file = hotspots.recording(service.getKey());
            Files.deleteIfExists(file);
            commands.put(service.getValue(), List.of("JFR.start", "name=" + RECORDING, "settings=profile", "filename=" + file));
        }
        jcmd(commands);
        return hotspots;
    }

    List<Profile> stop() throws IOException, InterruptedException {
        Map<Long, List<String>> commands = new LinkedHashMap<>();
        pids.values().forEach(pid -> commands.put(pid, List.of("JFR.stop", "name=" + RECORDING)));
        jcmd(commands);
        List<Profile> profiles = new ArrayList<>();
        for (String service : pids.keySet()) {
            profiles.add(read(service, recording(service)));
        }
        return profiles;
    }

    private Path recording(String service) {
        return directory.resolve(service + ".jfr").toAbsolutePath();
    }

    static Profile read(String service, Path file) throws IOException {
        Map<String, Long> layers = new HashMap<>();
        Map<String, Long> methods = new HashMap<>();
        long samples = 0;
        double gcPauseMs = 0;
        try (RecordingFile recording = new RecordingFile(file)) {
            while (recording.hasMoreEvents()) {
                RecordedEvent event = recording.readEvent();
                String type = event.getEventType().getName();
                if (type.equals("jdk.GarbageCollection")) {
                    gcPauseMs += event.getDuration("sumOfPauses").toNanos() / 1e6;
                } else if (type.equals("jdk.ExecutionSample")) {
                    samples++;
                    RecordedFrame frame = innermostOutsideJdk(event.getStackTrace());
                    String className = frame == null ? null : frame.getMethod().getType().getName();
                    layers.merge(frame == null ? "the JDK alone" : layerOf(className), 1L, Long::sum);
                    if (frame != null) {
                        methods.merge(simpleName(className) + "." + frame.getMethod().getName(), 1L, Long::sum);
                    }
                }
            }
        }
        return new Profile(service, samples, top(layers, samples, 8), top(methods, samples, 6), gcPauseMs,
                file.getFileName().toString());
    }

    /** The frame nearest the top of the stack whose class is not the JDK's; null if every one is. */
    private static RecordedFrame innermostOutsideJdk(RecordedStackTrace stack) {
        if (stack == null) {
            return null;
        }
        for (RecordedFrame frame : stack.getFrames()) { // the top frame first
            if (frame.isJavaFrame() && JDK.stream().noneMatch(frame.getMethod().getType().getName()::startsWith)) {
                return frame;
            }
        }
        return null;
    }

    static String layerOf(String className) {
        for (Map.Entry<String, String> layer : LAYERS.entrySet()) {
            if (className.startsWith(layer.getKey())) {
                return layer.getValue();
            }
        }
        String[] parts = className.split("\\.");
        return parts.length > 2 ? parts[0] + "." + parts[1] : className;
    }

    private static String simpleName(String className) {
        String[] parts = className.split("\\.");
        return parts.length > 1 ? parts[parts.length - 2] + "." + parts[parts.length - 1] : className;
    }

    /** "Hibernate ORM 24 %, PostgreSQL JDBC driver 18 %, …", the first {@code limit}. */
    static String describe(List<Share> shares, int limit) {
        return shares.stream().limit(limit).map(s -> "%s %.0f %%".formatted(s.name(), 100 * s.share()))
                .collect(java.util.stream.Collectors.joining(", "));
    }

    private static List<Share> top(Map<String, Long> counts, long total, int limit) {
        return counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                .limit(limit).map(e -> new Share(e.getKey(), total == 0 ? 0 : (double) e.getValue() / total)).toList();
    }

    /** Runs jcmd on each process at once (each jcmd is a JVM start of its own, a second on a busy machine). */
    private static void jcmd(Map<Long, List<String>> commands) throws IOException, InterruptedException {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        Map<String, Process> running = new LinkedHashMap<>();
        for (Map.Entry<Long, List<String>> command : commands.entrySet()) {
            List<String> line = new ArrayList<>(List.of(jcmd, String.valueOf(command.getKey())));
            line.addAll(command.getValue());
            running.put(String.join(" ", line.subList(1, line.size())), new ProcessBuilder(line).redirectErrorStream(true).start());
        }
        for (Map.Entry<String, Process> command : running.entrySet()) {
            Process process = command.getValue();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(Duration.ofMinutes(1).toSeconds(), TimeUnit.SECONDS) || process.exitValue() != 0
                    || output.contains("Could not") || output.contains("Exception")) {
                throw new IllegalStateException("jcmd " + command.getKey() + " failed: " + output);
            }
        }
    }
}
