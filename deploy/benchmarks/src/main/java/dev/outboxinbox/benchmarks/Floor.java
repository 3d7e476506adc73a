package dev.outboxinbox.benchmarks;

import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.InventoryEvent;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.OrderCreated;
import dev.outboxinbox.events.OrderEvent;
import dev.outboxinbox.system.OrderLoad;
import dev.outboxinbox.testing.PostgresEndpoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The database's floor for the whole pipeline (issue 29, item 3): pgbench doing all the PostgreSQL work
 * the pipeline does for its orders, with nothing else (no HTTP, no JSON, no broker, no JVM), on one
 * scratch database that has both services' schemas (order-service's in {@code public}, inventory's in
 * {@code inventory}, made by their own migrations and the libraries'), while two logical decoders
 * stream both outboxes' inserts from the WAL, as the two relays' slots do. For every {@code batch}
 * orders, weighted so:
 * <ul>
 *   <li>{@code batch} × order-service's transaction: the Idempotency-Key's claim, the order and its
 *       lines in one statement ({@code OrderInserts}), the outbox row, the commit;</li>
 *   <li>1 × inventory's batch: the inbox claim, the outcomes, the products locked and reserved, the
 *       reservations, the replies in its outbox;</li>
 *   <li>1 × order-service's reply batch: the inbox claim, the orders read and locked in one statement
 *       ({@code InventoryReplies}' look ahead), their updates;</li>
 *   <li>2 × a relay's offset commit (the term's row locked, the offset rewritten), one for each relay.</li>
 * </ul>
 * The batch is a choice (10 by default: {@code -DfloorBatch}); at saturation the consumers' batches and
 * the relays' polls are larger, which makes the pipeline's real work per order smaller than this. The
 * consumers take the newest orders they have not taken yet, of the last 5 seconds (through the outboxes'
 * time index; inventory's runs lock the outbox rows they take, SKIP LOCKED, so that two at once take
 * different orders, as two partitions do), as the pipeline's take the ones just committed; what share of the orders each got to is
 * part of the result (the last moment's orders are left). What it leaves out: the inboxes' and outboxes'
 * purges, the relays' heartbeats.
 */
final class Floor {

    /**
     * @param ordersPerSecond the order transactions a second: the floor's figure
     * @param reservedShare   of the orders placed, those inventory's script decided (the last moment's are not yet)
     * @param decidedShare    of the orders placed, those the replies' script moved out of PENDING
     * @param decodedMib      the WAL the slower decoder decoded and confirmed, from its slot's creation to the end
     */
    record Result(double ordersPerSecond, double tps, int clients, int seconds, int batch, long orders, double reservedShare,
                  double decidedShare, double decodedMib) {
    }

    private static final Pattern ORDER_SCRIPT_TPS = Pattern.compile(
            "SQL script 1: \\S*order\\.pgbench\\R(?:.*\\R)*? - ([0-9]+) transactions \\([0-9.]+% of total, tps = ([0-9.]+)\\)");
    private static final Pattern TPS = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)");

    static final String ORDERS_PUBLICATION = "outbox_publication";
    static final String INVENTORY_PUBLICATION = "floor_inventory_publication";
    private static final List<String> SLOTS = List.of("bench_floor_orders", "bench_floor_inventory");
    /** The two relays whose offset commits the floor makes (their leadership rows and offsets tables: Scratch.floorSchemas). */
    static final List<String> RELAY_SLOTS = List.of("outbox_relay", "outbox_relay_inventory");
    /** Every order's two lines: the first two SKUs of the load's catalogue, 2 and 1 of them. */
    private static final List<String> LINE_SKUS = OrderLoad.SKUS.subList(0, 2);
    private static final String LINE_SKU_ARRAY = "'{" + String.join(",", LINE_SKUS) + "}'";

    private Floor() {
    }

    static Result measure(Scratch scratch, Path workDir, int clients, int seconds, int batch) throws IOException, InterruptedException {
        scratch.floorSchemas(Scratch.FLOOR_DB, INVENTORY_PUBLICATION);
        PostgresEndpoint pg = scratch.pg();
        Map<String, String> scripts = scripts();
        List<String> files = new ArrayList<>();
        for (Map.Entry<String, String> script : scripts.entrySet()) {
            Path file = workDir.resolve(script.getKey() + ".pgbench");
            Files.writeString(file, script.getValue());
            files.add("--file=" + file + "@" + (script.getKey().equals("order") ? batch : 1));
        }
        List<Process> decoders = new ArrayList<>();
        List<String> created = new ArrayList<>();
        try {
            created.add(pg.query(Scratch.FLOOR_DB, "SELECT lsn FROM pg_create_logical_replication_slot('" + SLOTS.get(0) + "', 'pgoutput')"));
            created.add(pg.query(Scratch.FLOOR_DB, "SELECT lsn FROM pg_create_logical_replication_slot('" + SLOTS.get(1) + "', 'pgoutput')"));
            decoders.add(decode(pg, SLOTS.get(0), ORDERS_PUBLICATION, workDir));
            decoders.add(decode(pg, SLOTS.get(1), INVENTORY_PUBLICATION, workDir));
            List<String> command = new ArrayList<>(List.of("pgbench", "--no-vacuum", "--protocol=prepared", "--client=" + clients,
                    "--jobs=" + Math.min(clients, Runtime.getRuntime().availableProcessors()), "--time=" + seconds,
                    "--define=batch=" + batch, "--max-tries=10", "--host=" + pg.host(), "--port=" + pg.port(), "--username=" + pg.user()));
            command.addAll(files);
            command.add(Scratch.FLOOR_DB);
            ProcessBuilder pgbench = new ProcessBuilder(command).redirectErrorStream(true);
            pgbench.environment().put("PGPASSWORD", pg.password());
            Process process = pgbench.start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (process.waitFor() != 0) {
                throw new IllegalStateException("pgbench failed:\n" + output);
            }
            for (Process decoder : decoders) {
                if (!decoder.isAlive()) {
                    throw new IllegalStateException("a decoder (pg_recvlogical) stopped during the run: see " + workDir
                            + "/bench_floor_*.log");
                }
            }
            Result counted = parse(output, clients, seconds, batch);
            String end = pg.query(Scratch.FLOOR_DB, "SELECT pg_current_wal_lsn()");
            double decodedMib = decoded(pg, created, end);
            String shares = pg.query(Scratch.FLOOR_DB, "SELECT round(count(*) FILTER (WHERE EXISTS (SELECT 1 FROM inventory.order_outcomes c"
                    + " WHERE c.order_id = o.id))::numeric / count(*), 4) || ' ' || round(count(*) FILTER (WHERE status <> 'PENDING')::numeric"
                    + " / count(*), 4) FROM orders o");
            String[] share = shares.split(" ");
            return new Result(counted.ordersPerSecond(), counted.tps(), clients, seconds, batch, counted.orders(),
                    Double.parseDouble(share[0]), Double.parseDouble(share[1]), decodedMib);
        } finally {
            for (Process decoder : decoders) {
                decoder.destroy();
                if (!decoder.waitFor(10, TimeUnit.SECONDS)) {
                    decoder.destroyForcibly();
                }
            }
            dropSlots(pg);
        }
    }

    /**
     * Waits (10 s at most) until both decoders have confirmed the WAL up to {@code end}; returns what the
     * slower one confirmed since its slot was made, in MiB.
     */
    private static double decoded(PostgresEndpoint pg, List<String> created, String end) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String behind = "SELECT count(*) FROM pg_replication_slots WHERE slot_name IN ('" + String.join("', '", SLOTS) + "')"
                + " AND (confirmed_flush_lsn IS NULL OR confirmed_flush_lsn < '" + end + "')";
        while (!"0".equals(pg.query(Scratch.FLOOR_DB, behind)) && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
        double slowest = Double.MAX_VALUE;
        for (int i = 0; i < SLOTS.size(); i++) {
            String bytes = pg.query(Scratch.FLOOR_DB, "SELECT coalesce(pg_wal_lsn_diff(confirmed_flush_lsn, '" + created.get(i)
                    + "'), 0) FROM pg_replication_slots WHERE slot_name = '" + SLOTS.get(i) + "'");
            slowest = Math.min(slowest, Double.parseDouble(bytes) / (1024 * 1024));
        }
        return slowest;
    }

    /** The slots go with the run: once their walsenders have let go of them (10 s at most). */
    private static void dropSlots(PostgresEndpoint pg) {
        String in = "slot_name IN ('" + String.join("', '", SLOTS) + "')";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!"0".equals(pg.query(Scratch.FLOOR_DB, "SELECT count(*) FROM pg_replication_slots WHERE active AND " + in))
                && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
        pg.execute(Scratch.FLOOR_DB, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active AND " + in);
    }

    /** A logical decoder on its own slot, as a relay's: pgoutput, the publication's inserts, streamed and thrown away. */
    private static Process decode(PostgresEndpoint pg, String slot, String publication, Path workDir) throws IOException {
        ProcessBuilder recv = new ProcessBuilder("pg_recvlogical", "--dbname=" + Scratch.FLOOR_DB, "--host=" + pg.host(),
                "--port=" + pg.port(), "--username=" + pg.user(), "--slot=" + slot, "--start", "--no-loop", "--status-interval=1",
                "--fsync-interval=1",
                "--option=proto_version=1", "--option=publication_names=" + publication, "--file=/dev/null")
                .redirectErrorStream(true).redirectOutput(workDir.resolve(slot + ".log").toFile());
        recv.environment().put("PGPASSWORD", pg.password());
        return recv.start();
    }

    static Result parse(String output, int clients, int seconds, int batch) {
        Matcher order = ORDER_SCRIPT_TPS.matcher(output);
        Matcher all = TPS.matcher(output);
        if (!order.find() || !all.find()) {
            throw new IllegalStateException("pgbench printed no per-script tps for order.pgbench:\n" + output);
        }
        return new Result(Double.parseDouble(order.group(2)), Double.parseDouble(all.group(1)), clients, seconds, batch,
                Long.parseLong(order.group(1)), Double.NaN, Double.NaN, Double.NaN);
    }

    /** The scripts by name, the order's first (its tps is the figure). Variables: :batch (pgbench --define). */
    static Map<String, String> scripts() {
        Map<String, String> scripts = new LinkedHashMap<>();
        scripts.put("order", order());
        scripts.put("inventory", inventory());
        scripts.put("replies", replies());
        scripts.put("outbox-relay-offsets", offsets(RELAY_SLOTS.get(0)));
        scripts.put("reply-relay-offsets", offsets(RELAY_SLOTS.get(1)));
        return scripts;
    }

    private static final String NEW_UUID = "(lpad(to_hex(:%1$sh::bigint), 16, '0') || lpad(to_hex(:%1$sl::bigint), 16, '0'))::uuid";

    /** order-service's transaction as OrderInserts and OutboxWriter.append write it: two statements and the commit. */
    static String order() {
        String payload = quoted(EventJson.write(new OrderCreated(UUID.randomUUID(), UUID.randomUUID(), "pgbench-customer",
                List.of(new OrderCreated.Line(LINE_SKUS.get(0), 2), new OrderCreated.Line(LINE_SKUS.get(1), 1)), Instant.now())));
        String orderId = NEW_UUID.formatted("o");
        return "\\set oh random(1, 9223372036854775806)\n"
                + "\\set ol random(1, 9223372036854775806)\n"
                + "\\set eh random(1, 9223372036854775806)\n"
                + "\\set el random(1, 9223372036854775806)\n"
                + "BEGIN;\n"
                + "WITH claim AS (INSERT INTO idempotency_keys (idempotency_key, request_hash, order_id) VALUES ('pgbench-' || :oh::text"
                + " || '-' || :ol::text, md5(:ol::text), " + orderId + ") ON CONFLICT (idempotency_key) DO NOTHING RETURNING order_id),"
                + " placed AS (INSERT INTO orders (id, customer_id, currency, placed_at, status) SELECT order_id, 'pgbench-' ||"
                + " :client_id::text, 'EUR', now(), 'PENDING' FROM claim RETURNING id),"
                + " lines AS (INSERT INTO order_lines (order_id, line_no, sku, quantity, unit_price) SELECT placed.id, line.line_no - 1,"
                + " line.sku, line.quantity, line.unit_price FROM placed, unnest(" + LINE_SKU_ARRAY + "::text[], '{2,1}'::int[],"
                + " '{0.50,0.40}'::numeric[]) WITH ORDINALITY AS line (sku, quantity, unit_price, line_no))"
                + " SELECT count(*) FROM placed;\n"
                + "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at) VALUES ("
                + NEW_UUID.formatted("e") + ", '" + OrderEvent.AGGREGATE_TYPE + "', " + orderId + "::text, '" + OrderCreated.TYPE + "', "
                + OrderCreated.SCHEMA_VERSION + ", '" + payload + "'::jsonb, NULL, now());\n"
                + "END;\n";
    }

    /**
     * inventory-service's batch (StockReservations), for the newest :batch orders it has not decided: the inbox claim, the
     * outcomes claimed, the two products locked in SKU order and reserved, the reservations, the replies.
     */
    static String inventory() {
        String payload = quoted(EventJson.write(new InventoryReserved(UUID.randomUUID(), UUID.randomUUID(), Instant.now())));
        String newest = "(SELECT aggregateid::uuid AS order_id FROM public.outbox o WHERE o.occurred_at > now() - interval '5 seconds'"
                + " AND NOT EXISTS (SELECT 1 FROM inventory.order_outcomes c WHERE c.order_id = o.aggregateid::uuid)"
                + " ORDER BY o.occurred_at DESC LIMIT :batch::int FOR UPDATE OF o SKIP LOCKED)";
        String claimed = "unnest(:claimed::uuid[]) AS o(order_id)";
        return "BEGIN;\n"
                + "INSERT INTO inventory.inbox (consumer, message_id, message_type) SELECT 'inventory-service', gen_random_uuid()::text,"
                + " 'OrderCreated' FROM generate_series(1, :batch::int) ON CONFLICT DO NOTHING;\n"
                // The outcomes claimed; only the orders claimed here reserve and reply (pgbench's gset keeps them for the rest).
                + "WITH c AS (INSERT INTO inventory.order_outcomes (order_id, status, reason, message_id, decided_at) SELECT order_id,"
                + " 'RESERVED', NULL, gen_random_uuid()::text, now() FROM " + newest + " o ON CONFLICT (order_id) DO NOTHING"
                + " RETURNING order_id) SELECT coalesce(array_agg(order_id), '{}') AS claimed FROM c \\gset\n"
                + "SELECT sku, on_hand - reserved FROM inventory.products WHERE sku = ANY(" + LINE_SKU_ARRAY + ") ORDER BY sku FOR UPDATE;\n"
                + "UPDATE inventory.products p SET reserved = p.reserved + d.quantity FROM unnest(" + LINE_SKU_ARRAY + "::text[],"
                + " ARRAY[2 * cardinality(:claimed::uuid[]), cardinality(:claimed::uuid[])]) AS d(sku, quantity) WHERE p.sku = d.sku;\n"
                + "INSERT INTO inventory.reservations (order_id, sku, quantity) SELECT o.order_id, l.sku, l.quantity FROM " + claimed + ","
                + " unnest(" + LINE_SKU_ARRAY + "::text[], '{2,1}'::int[]) AS l(sku, quantity);\n"
                + "INSERT INTO inventory.outbox (id, aggregatetype, aggregateid, type, schema_version, payload, traceparent, occurred_at)"
                + " SELECT gen_random_uuid(), '" + InventoryEvent.AGGREGATE_TYPE + "', o.order_id::text, '" + InventoryReserved.TYPE + "', "
                + InventoryReserved.SCHEMA_VERSION + ", '" + payload + "'::jsonb, NULL, now() FROM " + claimed + ";\n"
                + "END;\n";
    }

    /**
     * order-service's reply batch (the inbox channel with InventoryReplies' look ahead), for the newest
     * :batch replies whose orders are still PENDING: the inbox claim, their orders read and locked in one
     * statement, then updated.
     * SKIP LOCKED: two clients here are two partitions, which never share an order.
     */
    static String replies() {
        return "BEGIN;\n"
                + "INSERT INTO inbox (consumer, message_id, message_type) SELECT 'order-service', gen_random_uuid()::text,"
                + " 'InventoryReserved' FROM generate_series(1, :batch::int) ON CONFLICT DO NOTHING;\n"
                // The look: the rows read and locked (their ids kept for the update: pgbench's gset takes one row).
                + "SELECT coalesce(array_agg(id), '{}') AS locked FROM (SELECT o.id, o.cancelled_at, o.cancelled_by, o.decided_at,"
                + " o.decided_by, o.status, o.status_reason FROM inventory.outbox r JOIN orders o ON o.id = r.aggregateid::uuid"
                + " WHERE r.occurred_at > now() - interval '5 seconds' AND o.status = 'PENDING' ORDER BY r.occurred_at DESC"
                + " LIMIT :batch::int FOR NO KEY UPDATE OF o SKIP LOCKED) l \\gset\n"
                + "UPDATE orders SET status = 'CONFIRMED', status_reason = NULL, decided_at = now(), decided_by = gen_random_uuid()::text"
                + " WHERE id = ANY(:locked::uuid[]);\n"
                + "END;\n";
    }

    /** A relay's offset commit (FencedOffsetBackingStore): its term's row locked, the offset rewritten. */
    static String offsets(String slot) {
        String table = "relay." + slot + "_offsets";
        return "\\set seq random(1, 2147483647)\n"
                + "BEGIN;\n"
                + "SELECT epoch FROM relay.relay_leadership WHERE slot_name = '" + slot + "' FOR UPDATE;\n"
                + "DELETE FROM " + table + ";\n"
                + "INSERT INTO " + table + " (id, offset_key, offset_val, record_insert_ts, record_insert_seq) VALUES (gen_random_uuid()::text,"
                + " '[\"outbox-relay\",{\"server\":\"outbox\"}]', '{\"lsn_proc\":' || pg_current_wal_lsn() - '0/0' || ',\"lsn_commit\":'"
                + " || pg_current_wal_lsn() - '0/0' || ',\"txId\":' || txid_current() || ',\"ts_usec\":' || :seq || '}', now(), :seq);\n"
                + "END;\n";
    }

    private static String quoted(String payload) {
        if (payload.contains("'")) {
            throw new IllegalStateException("the payload would need quoting: " + payload);
        }
        return payload;
    }
}
