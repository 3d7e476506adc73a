package {{package}};

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.events.Event;
import dev.outboxinbox.events.EventExamples;
import dev.outboxinbox.events.MessageHeaders;
import dev.outboxinbox.inbox.InboxMetrics;
import dev.outboxinbox.testing.AsTheRelay;
import dev.outboxinbox.testing.FreshDatabaseResource;
import dev.outboxinbox.testing.RealServices;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {{name}} against the real RabbitMQ and PostgreSQL (its own fresh database and virtual host): an event
 * delivered twice takes effect once, and a message that breaks the contract is dead-lettered with its reason.
 */
@QuarkusTest
@WithTestResource(value = FreshDatabaseResource.class, initArgs = {
        @ResourceArg(name = "database", value = "{{database}}_service_test"),
        @ResourceArg(name = "virtualHost", value = {{Stem}}ServiceTest.VIRTUAL_HOST)})
class {{Stem}}ServiceTest {

    static final String VIRTUAL_HOST = "{{stem}}-test";

    @Inject
    InboxMetrics metrics;

    @Inject
    DataSource database;

    @BeforeEach
    void consuming() {
        // Ready once it consumes: its queue is declared and bound, so what is published now reaches it.
        await().atMost(Duration.ofSeconds(60)).until(() -> given().get("/q/health/ready").statusCode() == 200);
    }

    @Test
    void anEventDeliveredTwiceTakesEffectOnce() throws Exception {
        Event event = EventExamples.of("{{first-event}}");
        long duplicates = metrics.duplicates();
        publish(event, event.payloadJson());
        publish(event, event.payloadJson());

        await().atMost(Duration.ofSeconds(30)).until(() -> metrics.duplicates() > duplicates);
        assertThat(count("SELECT count(*) FROM received_events WHERE event_id = ?", event.eventId())).isOne();
{{test-sends}}    }

    @Test
    void aMessageThatBreaksTheContractIsDeadLetteredWithItsReason() throws Exception {
        Event event = EventExamples.of("{{first-event}}");
        publish(event, "{}");

        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            parked.addAll(takeDeadLetters());
            return parked.stream().anyMatch(d -> event.eventId().toString().equals(d.getProps().getMessageId()));
        });
        assertThat(parked).filteredOn(d -> event.eventId().toString().equals(d.getProps().getMessageId())).singleElement()
                .satisfies(d -> assertThat(String.valueOf(d.getProps().getHeaders().get(MessageHeaders.DEAD_LETTER_REASON)))
                        .contains("required"));
        assertThat(count("SELECT count(*) FROM received_events WHERE event_id = ?", event.eventId())).isZero();
    }

    /** As outbox-relay publishes its producer's events. */
    private static void publish(Event event, String body) throws Exception {
        AsTheRelay.publish(RealServices.rabbitMq().connectionFactory(VIRTUAL_HOST), event, body);
    }

    private static List<GetResponse> takeDeadLetters() throws Exception {
        List<GetResponse> taken = new ArrayList<>();
        try (Connection connection = connection(); Channel channel = connection.createChannel()) {
            for (GetResponse response; (response = channel.basicGet("{{dead-letter-queue}}", true)) != null; ) {
                taken.add(response);
            }
        }
        return taken;
    }

    private static Connection connection() throws Exception {
        return RealServices.rabbitMq().connectionFactory(VIRTUAL_HOST).newConnection();
    }

    private long count(String sql, Object parameter) throws Exception {
        try (var connection = database.getConnection(); PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setObject(1, parameter);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        }
    }
}
