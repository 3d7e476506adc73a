package dev.outboxinbox.order;

import com.rabbitmq.client.AMQP;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.InventoryReserved;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.testing.InboxThroughput;
import dev.outboxinbox.testing.InboxThroughput.Outgoing;
import dev.outboxinbox.testing.PostgresEndpoint;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Measures the packaged order-service's reply consumer — the SmallRye channel on the inbox
 * library's connector, an {@code @Incoming @Inbox} method called once per message, the messages that
 * arrive together in one transaction (the channel's group commit) — on the real
 * PostgreSQL and RabbitMQ, as InventoryBenchmark measures inventory's group commit, so that the two
 * run side by side ({@code deploy/benchmarks/replies}): N {@code InventoryReserved} replies for N
 * PENDING orders, held in the queue and released; then the same N again as duplicates, timed until
 * a sentinel reply behind them is in the inbox. A warm-up round runs first. Not a test: it asserts
 * nothing and the build does not run it.
 */
public final class ReplyBenchmark {

    public static void main(String[] args) throws Exception {
        InboxThroughput.benchmark("order_benchmark", "order-benchmark", "replies", ReplyBenchmark::replies);
    }

    /** Replies for as many new PENDING orders, written to order-service's database first. */
    private static List<Outgoing> replies(PostgresEndpoint pg, String database, int count) throws Exception {
        List<Outgoing> replies = new ArrayList<>(count);
        try (var c = pg.connect(database);
             PreparedStatement insert = c.prepareStatement("INSERT INTO orders (id, customer_id, placed_at) VALUES (?, 'bench', now())")) {
            for (int i = 0; i < count; i++) {
                InventoryReserved reply = new InventoryReserved(UUID.randomUUID(), UUID.randomUUID(), Instant.now());
                insert.setObject(1, reply.orderId());
                insert.addBatch();
                AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                        .messageId(reply.eventId().toString()).type(reply.eventType()).contentType(MessageHeaders.CONTENT_TYPE)
                        .headers(Map.of(MessageHeaders.SCHEMA_VERSION, reply.schemaVersion(),
                                MessageHeaders.AGGREGATE_TYPE, reply.aggregateType(), MessageHeaders.AGGREGATE_ID, reply.aggregateId()))
                        .deliveryMode(2).build();
                replies.add(new Outgoing(reply.aggregateType(), reply.eventType(), properties,
                        EventJson.write(reply).getBytes(StandardCharsets.UTF_8)));
            }
            insert.executeBatch();
        }
        return replies;
    }
}
