package dev.outboxinbox.inventory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.EventJson;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.events.OrderCreated;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@InventoryServiceTest
class BadMessageTest {

    private static final String CASE = "x-test-case";

    @Inject
    InventoryDatabase db;

    /** Each case: how to spoil a valid message (its properties builder and body), and words the reason must contain. */
    static Stream<Arguments> badMessages() {
        return Stream.of(
                bad("malformed JSON", (p, body) -> "{\"eventId\": ".getBytes(), "malformed JSON"),
                bad("empty body", (p, body) -> new byte[0], "empty body"),
                bad("oversized body", (p, body) -> new byte[70_000], "oversized"),
                bad("no message id", (p, body) -> { p.messageId(null); return body; }, "message_id"),
                bad("message id not the event id", (p, body) -> { p.messageId(UUID.randomUUID().toString()); return body; }, "not the payload's eventId"),
                bad("unknown event type", (p, body) -> { p.type("OrderShipped"); return body; }, "unknown event type 'OrderShipped'"),
                bad("no event type", (p, body) -> { p.type(null); return body; }, "no event type"),
                bad("unsupported schema version", (p, body) -> { header(p, MessageHeaders.SCHEMA_VERSION, 0); return body; }, "unsupported schema version 0"),
                bad("missing schema version", (p, body) -> { header(p, MessageHeaders.SCHEMA_VERSION, null); return body; }, "schema-version"),
                bad("zero quantity", (p, body) -> new String(body).replace("\"quantity\":3", "\"quantity\":0").getBytes(), "/lines/0/quantity"),
                bad("blank SKU", (p, body) -> new String(body).replaceFirst("\"sku\":\"[^\"]*\"", "\"sku\":\"  \"").getBytes(), "/lines/0/sku"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badMessages")
    void aBadMessageIsDeadLetteredWithItsReasonAndTheNextGoodOneIsProcessed(
            String name, BiFunction<AMQP.BasicProperties.Builder, byte[], byte[]> spoil, String reason) {
        String sku = db.newProduct(10);
        OrderCreated bad = Broker.order(sku, 3);
        AMQP.BasicProperties.Builder properties = Broker.propertiesOf(bad);
        header(properties, CASE, name);
        byte[] body = spoil.apply(properties, EventJson.write(bad).getBytes());
        OrderCreated good = Broker.order(sku, 2);

        Broker.publish(properties.build(), body);
        Broker.publish(good);

        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            parked.addAll(Broker.takeDeadLetters());
            return parked.stream().anyMatch(m -> name.equals(String.valueOf(m.getProps().getHeaders().get(CASE))));
        });
        GetResponse deadLetter = parked.stream()
                .filter(m -> name.equals(String.valueOf(m.getProps().getHeaders().get(CASE)))).findFirst().orElseThrow();
        assertThat(deadLetter.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)).asString().contains(reason);
        assertThat(deadLetter.getProps().getHeaders().get("x-original-routing-key")).hasToString(OrderCreated.TYPE);
        assertThat(deadLetter.getBody()).isEqualTo(body);

        await().atMost(Duration.ofSeconds(30)).until(() -> "RESERVED".equals(db.status(good.orderId())));
        assertThat(db.reserved(sku)).as("only the good message took effect").isEqualTo(2);
        await().atMost(Duration.ofSeconds(10)).until(() -> Broker.messagesWaitingForInventory() == 0);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("poisonInTheMiddle")
    void aMessageThatMakesItsTransactionFailIsIsolatedFromItsBatch(String name) {
        String sku = db.newProduct(1000);
        List<OrderCreated> orders = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            orders.add(Broker.order(sku, 1));
        }
        OrderCreated poison = orders.get(15);
        db.execute("""
                CREATE FUNCTION reject_%1$s() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'injected data error for this order'; END $$;
                CREATE TRIGGER reject_%1$s BEFORE INSERT ON reservations FOR EACH ROW
                    WHEN (NEW.order_id = '%2$s') EXECUTE FUNCTION reject_%1$s();
                """.formatted(poison.orderId().toString().replace('-', '_'), poison.orderId()));

        orders.forEach(Broker::publish);

        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            parked.addAll(Broker.takeDeadLetters());
            return parked.stream().anyMatch(m -> poison.eventId().toString().equals(m.getProps().getMessageId()));
        });
        assertThat(parked.stream().filter(m -> poison.eventId().toString().equals(m.getProps().getMessageId())).findFirst()
                .orElseThrow().getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON))
                .asString().contains("injected data error");
        await().atMost(Duration.ofSeconds(30)).until(() -> db.reserved(sku) == 29);
        assertThat(db.status(poison.orderId())).isNull();
    }

    static Stream<String> poisonInTheMiddle() {
        return Stream.of("one poison among 30");
    }

    private static Arguments bad(String name, BiFunction<AMQP.BasicProperties.Builder, byte[], byte[]> spoil, String reason) {
        return Arguments.of(name, spoil, reason);
    }

    private static void header(AMQP.BasicProperties.Builder properties, String name, Object value) {
        Map<String, Object> headers = new HashMap<>(properties.build().getHeaders());
        if (value == null) {
            headers.remove(name);
        } else {
            headers.put(name, value);
        }
        properties.headers(headers);
    }
}
