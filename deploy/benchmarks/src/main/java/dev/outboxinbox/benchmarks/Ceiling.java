package dev.outboxinbox.benchmarks;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.testing.PostgresEndpoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The machine's limit for order-service's write: pgbench running the statements of one
 * {@code POST /orders} transaction as they were until issue 29 (the Idempotency-Key claim, the order,
 * its one to three lines, the outbox row with a real OrderCreated payload, each a statement; the key's
 * deferred foreign key checked at commit), on a database made by order-service's migrations, at the
 * concurrency of the saturation run. Prepared statements, as the JDBC driver uses them after a few
 * executions. Kept as it was, the reference issue 29 measures the pipeline against; order-service now
 * writes the claim, the order and its lines in one statement ({@code OrderInserts}).
 * What it leaves out: HTTP, JSON, the pool, the decoding of the WAL by a slot.
 */
final class Ceiling {

    record Result(double tps, double latencyMs, int clients, int seconds, long transactions) {
    }

    private static final Pattern TPS = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)");
    private static final Pattern LATENCY = Pattern.compile("latency average = ([0-9.]+) ms");
    private static final Pattern TRANSACTIONS = Pattern.compile("number of transactions actually processed: ([0-9]+)");

    private Ceiling() {
    }

    static Result measure(Scratch scratch, Path workDir, int clients, int seconds) throws IOException, InterruptedException {
        scratch.ordersSchema(Scratch.CEILING_DB);
        Path script = workDir.resolve("place-order.pgbench");
        Files.writeString(script, script());
        PostgresEndpoint pg = scratch.pg();
        ProcessBuilder pgbench = new ProcessBuilder("pgbench", "--no-vacuum", "--protocol=prepared", "--client=" + clients,
                "--jobs=" + Math.min(clients, Runtime.getRuntime().availableProcessors()), "--time=" + seconds,
                "--file=" + script, "--host=" + pg.host(), "--port=" + pg.port(), "--username=" + pg.user(), Scratch.CEILING_DB)
                .redirectErrorStream(true);
        pgbench.environment().put("PGPASSWORD", pg.password());
        Process process;
        try {
            process = pgbench.start();
        } catch (IOException e) {
            throw new IllegalStateException("pgbench is not installed (Debian: apt-get install postgresql-client)", e);
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.waitFor() != 0) {
            throw new IllegalStateException("pgbench failed:\n" + output);
        }
        return parse(output, clients, seconds);
    }

    static Result parse(String output, int clients, int seconds) {
        return new Result(number(TPS, output), number(LATENCY, output), clients, seconds, (long) number(TRANSACTIONS, output));
    }

    private static double number(Pattern pattern, String output) {
        Matcher m = pattern.matcher(output);
        if (!m.find()) {
            throw new IllegalStateException("pgbench printed no '" + pattern.pattern() + "':\n" + output);
        }
        return Double.parseDouble(m.group(1));
    }

    /**
     * One order per transaction. Ids are made of pgbench's random numbers (no extra round trip for a
     * UUID); the payload is a real OrderCreated with two lines, as the outbox writer stores it.
     */
    static String script() {
        String payload = EventJson.write(new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "pgbench-customer",
                List.of(new OrderCreated.Line("SKU-APPLE", 2), new OrderCreated.Line("SKU-PEAR", 1)), Instant.now()));
        if (payload.contains("'")) {
            throw new IllegalStateException("the payload would need quoting: " + payload);
        }
        String orderId = "(lpad(to_hex(:oh::bigint), 16, '0') || lpad(to_hex(:ol::bigint), 16, '0'))::uuid";
        String eventId = "(lpad(to_hex(:eh::bigint), 16, '0') || lpad(to_hex(:el::bigint), 16, '0'))::uuid";
        String line = "INSERT INTO order_lines (order_id, line_no, sku, quantity) VALUES (" + orderId + ", %d, '%s', %d);\n";
        return "\\set lines random(1, 3)\n"
                + "\\set oh random(1, 9223372036854775806)\n"
                + "\\set ol random(1, 9223372036854775806)\n"
                + "\\set eh random(1, 9223372036854775806)\n"
                + "\\set el random(1, 9223372036854775806)\n"
                + "BEGIN;\n"
                + "INSERT INTO idempotency_keys (idempotency_key, request_hash, order_id) VALUES ('pgbench-' || :oh::text || '-' || :ol::text, "
                + "md5(:ol::text), " + orderId + ") ON CONFLICT (idempotency_key) DO NOTHING;\n"
                + "INSERT INTO orders (customer_id, decided_at, decided_by, placed_at, status, status_reason, id) "
                + "VALUES ('pgbench-' || :client_id::text, NULL, NULL, now(), 'PENDING', NULL, " + orderId + ");\n"
                + line.formatted(1, "SKU-APPLE", 2)
                + "\\if :lines >= 2\n" + line.formatted(2, "SKU-PEAR", 1) + "\\endif\n"
                + "\\if :lines >= 3\n" + line.formatted(3, "SKU-PLUM", 3) + "\\endif\n"
                + "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at) VALUES ("
                + eventId + ", '" + OrderEvent.AGGREGATE_TYPE + "', " + orderId + "::text, '" + OrderCreated.TYPE + "', "
                + OrderCreated.SCHEMA_VERSION + ", '" + payload + "'::jsonb, NULL, now());\n"
                + "END;\n";
    }
}
