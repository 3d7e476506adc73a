package dev.outboxinbox.benchmarks;

import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.system.SystemUnderTest;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The benchmarks' load generator: wrk, on one thread, placing orders with the Lua script {@code orders.lua} (its
 * header says what it sends) for a given time: at saturation, a closed loop of {@code connections} requests in
 * flight; in the latency runs, open loop at a given rate (Poisson arrivals). A process of its own, in C: about a
 * tenth of the Java client's CPU per order, and apart from the harness's ({@link Cpu} counts it as the harness's child).
 */
final class Wrk {

    /**
     * @param created    201s wrk received
     * @param other      other answers (each is a failure of the run: the harness stops on one)
     * @param errors     connect, read, write errors and timeouts
     * @param seconds    how long wrk ran, by its own clock
     */
    record Result(String run, int created, int other, int errors, double seconds, double p50Ms, double p99Ms) {

        double createdPerSecond() {
            return created / seconds;
        }
    }

    private static final Pattern RESULT = Pattern.compile(
            "wrk-result created=(\\d+) other=(\\d+) socket_errors=(\\d+) duration_us=(\\d+) p50_us=(\\d+) p99_us=(\\d+)");

    private final Path script;

    private Wrk(Path script) {
        this.script = script;
    }

    /** Writes the Lua script into {@code directory}; refuses at once if wrk is not installed. */
    static Wrk in(Path directory) throws IOException, InterruptedException {
        Process which = new ProcessBuilder("sh", "-c", "command -v wrk").redirectErrorStream(true).start();
        if (which.waitFor() != 0) {
            throw new IllegalStateException("wrk is not installed (Debian: apt-get install wrk; elsewhere https://github.com/wg/wrk)");
        }
        Files.createDirectories(directory);
        Path script = directory.resolve("orders.lua");
        try (InputStream in = Wrk.class.getResourceAsStream("/orders.lua")) {
            if (in == null) {
                throw new IllegalStateException("orders.lua is not on the harness's classpath");
            }
            Files.write(script, in.readAllBytes());
        }
        return new Wrk(script);
    }

    /**
     * Places orders with customer id {@code run} for {@code seconds}, {@code connections} in flight, their
     * lines from {@link OrderLoad#SKUS} (the catalogue deploy/local seeds).
     */
    Result place(URI orderService, String run, int connections, int seconds) throws IOException, InterruptedException {
        return place(orderService, run, connections, seconds, 0);
    }

    /**
     * As {@link #place(URI, String, int, int)}, open loop at {@code perSecond} orders/s in all (Poisson arrivals:
     * orders.lua's header), when it is above zero; at saturation otherwise.
     */
    Result place(URI orderService, String run, int connections, int seconds, double perSecond)
            throws IOException, InterruptedException {
        List<String> command = List.of("wrk", "-t1", "-c" + connections, "-d" + seconds + "s", "--timeout", "10s",
                "-s", script.toString(), orderService.toString(), "--", run, String.join(",", OrderLoad.SKUS));
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        if (perSecond > 0) {
            builder.environment().put("ORDERS_PER_SECOND", String.valueOf(perSecond));
        }
        Process wrk = builder.start();
        String output = new String(wrk.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (wrk.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited with " + wrk.exitValue() + ":\n" + output);
        }
        Matcher result = RESULT.matcher(output);
        if (!result.find()) {
            throw new IllegalStateException("wrk printed no result line:\n" + output);
        }
        Result placed = new Result(run, Integer.parseInt(result.group(1)), Integer.parseInt(result.group(2)),
                Integer.parseInt(result.group(3)), Long.parseLong(result.group(4)) / 1e6,
                Long.parseLong(result.group(5)) / 1e3, Long.parseLong(result.group(6)) / 1e3);
        if (placed.other() > 0 || placed.errors() > 0) {
            // A refusal or a broken connection at saturation is a fault of the system, not a figure of it.
            throw new IllegalStateException("wrk: %d answers other than 201 and %d socket errors in run %s (its first answers are above)"
                    .formatted(placed.other(), placed.errors(), run));
        }
        return placed;
    }

    /**
     * The orders of a run, from order-service's database: those wrk saw created, and any whose answer was
     * still on its way when its time ran out.
     */
    static List<UUID> ordersOf(SystemUnderTest system, String run) throws SQLException {
        List<UUID> ids = new ArrayList<>();
        try (Connection c = system.orders().connect();
             PreparedStatement query = c.prepareStatement("SELECT id FROM orders WHERE customer_id = ?")) {
            query.setString(1, run);
            try (ResultSet rs = query.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return ids;
    }
}
