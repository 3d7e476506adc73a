package dev.outboxinbox.system;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Topology;
import dev.outboxinbox.testing.PostgresEndpoint;
import dev.outboxinbox.testing.RabbitMqEndpoint;
import dev.outboxinbox.testing.RealServices;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The chaos run's replays are copies a relay could send: never an event before an earlier event of
 * its order (which would be a reordering the harness made), never a row written for a refused exchange.
 */
class ReplayTest {

    private static final String ORDERS_DB = "replay_orders";
    private static final String VHOST = "replay-test";
    private static final String COPIES = "replay.copies";

    private final PostgresEndpoint pg = RealServices.postgres();
    private final RabbitMqEndpoint rabbit = RealServices.rabbitMq();
    private Database orders;
    private Broker broker;

    @BeforeEach
    void freshState() throws Exception {
        pg.recreateDatabase(ORDERS_DB);
        Flyway.configure().dataSource(pg.jdbcUrl(ORDERS_DB), pg.user(), pg.password())
                .locations("filesystem:" + SystemFixture.ROOT.resolve("order-service/src/main/resources/db/migration"))
                .placeholders(Map.of("outbox_publication", "replay_publication", "relay_role", "nobody"))
                .load().migrate();
        rabbit.recreateVirtualHost(VHOST);
        try (Connection connection = rabbit.connectionFactory(VHOST).newConnection(); Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(Topology.ORDERS_EXCHANGE, BuiltinExchangeType.TOPIC, true);
            channel.queueDeclare(COPIES, true, false, false, Map.of());
            channel.queueBind(COPIES, Topology.ORDERS_EXCHANGE, "#");
        }
        orders = new Database(pg.jdbcUrl(ORDERS_DB), pg.user(), pg.password());
        broker = new Broker(rabbit.host(), rabbit.port(), VHOST, rabbit.user(), rabbit.password(), rabbit.management());
    }

    @Test
    void aReplayedCancellationFollowsACopyOfItsOrdersCreation() throws Exception {
        UUID order = UUID.randomUUID();
        String created = event("orders", order.toString(), "OrderCreated", "2026-01-01 10:00:00+00");
        String cancelled = event("orders", order.toString(), "OrderCancelled", "2026-01-01 10:00:01+00");

        List<Replay.OutboxEvent> newest = Replay.newest(orders, 1);
        Replay.publish(broker, newest);

        assertThat(newest).extracting(Replay.OutboxEvent::id).containsExactly(cancelled);
        assertThat(copies()).containsExactly(created, cancelled);
    }

    @Test
    void aRowForARefusedExchangeIsNeverReplayed() throws Exception {
        String created = event("orders", UUID.randomUUID().toString(), "OrderCreated", "2026-01-01 10:00:00+00");
        // Written last, for an exchange the broker refuses: never published, so there is nothing to copy.
        event("chaos.refused", "refused-1", "OrderCreated", "2026-01-01 10:00:02+00");

        Replay.publish(broker, Replay.newest(orders, 1));

        assertThat(copies()).containsExactly(created);
    }

    @Test
    void eventsOfOtherOrdersAreCopiedAsChosen() throws Exception {
        String first = event("orders", UUID.randomUUID().toString(), "OrderCreated", "2026-01-01 10:00:00+00");
        String second = event("orders", UUID.randomUUID().toString(), "OrderCreated", "2026-01-01 10:00:01+00");

        List<Replay.OutboxEvent> newest = Replay.newest(orders, 5);
        Replay.publish(broker, List.of(newest.get(0), newest.get(1), newest.get(0)));

        assertThat(copies()).containsExactly(second, first, second);
    }

    private String event(String exchange, String aggregateId, String type, String occurredAt) {
        String id = UUID.randomUUID().toString();
        pg.execute(ORDERS_DB, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, schema_version, payload, occurred_at)"
                + " VALUES ('" + id + "', '" + exchange + "', '" + aggregateId + "', '" + type + "', 1, '{}', '" + occurredAt + "')");
        return id;
    }

    private List<String> copies() throws Exception {
        List<String> ids = new ArrayList<>();
        try (Connection connection = rabbit.connectionFactory(VHOST).newConnection(); Channel channel = connection.createChannel()) {
            for (GetResponse message; (message = channel.basicGet(COPIES, true)) != null; ) {
                ids.add(message.getProps().getMessageId());
            }
        }
        return ids;
    }
}
