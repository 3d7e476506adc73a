package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.GetResponse;
import dev.outboxinbox.inbox.InboxHeaders;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;
import org.junit.jupiter.api.Test;

/**
 * A consumer never stops reading quietly. What escapes a delivery callback would make the RabbitMQ
 * client close the channel (its default exception handler), which looks like a close by the
 * application: the queue would no longer be read while readiness stayed up. So it is caught, and
 * the message settled by whose fault it is; and a consumer stopped by anything else (its queue
 * deleted, its channel closed) shows in readiness, naming the queue, and is subscribed again.
 */
@QuarkusTest
@WithTestResource(value = ConsumerTestResource.class, initArgs = {
        @ResourceArg(name = "database", value = "inbox_consumer_stops_test"),
        @ResourceArg(name = "virtualHost", value = ConsumerStopsTest.VHOST)})
class ConsumerStopsTest {

    static final String VHOST = "inbox-consumer-stops-test";
    static final String QUEUE = "greetings.inbox-test";

    private final TestBroker broker = new TestBroker(VHOST);

    @Inject
    @Readiness
    ConsumerReadiness readiness;

    @Inject
    DataSource dataSource;

    @Test
    void anErrorThrownWhileDecodingParksThatMessageAndTheQueueIsStillRead() throws Exception {
        await().atMost(Duration.ofSeconds(30)).until(this::ready);
        // The test's decoder unwraps brackets by recursion, as a naive parser would: this deep, a StackOverflowError.
        String nested = UUID.randomUUID().toString();
        broker.publishGreeting(nested, "[".repeat(60_000) + "deep" + "]".repeat(5_000));
        String after = UUID.randomUUID().toString();
        broker.publishGreeting(after, "after the one that overflowed");

        await().atMost(Duration.ofSeconds(30)).until(() -> greetings(after) == 1);
        // Readiness speaks for both channels of the service, each named.
        assertThat(String.valueOf(readiness.call().getData().orElseThrow().get("queue")))
                .contains("greetings: " + QUEUE, "farewells: greeting-consumer.farewells");
        List<GetResponse> parked = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            parked.addAll(broker.take(QUEUE + ".dead-letter"));
            return parked.stream().anyMatch(m -> nested.equals(m.getProps().getMessageId()));
        });
        GetResponse overflowed = parked.stream().filter(m -> nested.equals(m.getProps().getMessageId())).findFirst().orElseThrow();
        assertThat(String.valueOf(overflowed.getProps().getHeaders().get(InboxHeaders.DEAD_LETTER_REASON)))
                .contains("StackOverflowError");
        assertThat(ready()).isTrue();
    }

    @Test
    void aQueueDeletedUnderTheConsumerIsSeenByReadinessAndReadAgainOnceBack() throws Exception {
        await().atMost(Duration.ofSeconds(30)).until(this::ready);
        broker.deleteQueue(QUEUE);

        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> !ready());
        String problem = String.valueOf(readiness.call().getData().orElseThrow().get("problem"));
        System.out.printf("ConsumerStopsTest: with its queue deleted, readiness says: %s%n", problem);
        assertThat(problem).contains(QUEUE);

        // The consumer declares its queue again on its next start: the queue is back, and read.
        await().atMost(Duration.ofSeconds(30)).until(this::ready);
        String id = UUID.randomUUID().toString();
        broker.publishGreeting(id, "to the queue that came back");
        await().atMost(Duration.ofSeconds(30)).until(() -> greetings(id) == 1);
    }

    private boolean ready() {
        return readiness.call().getStatus() == HealthCheckResponse.Status.UP;
    }

    private long greetings(String id) throws Exception {
        try (java.sql.Connection connection = dataSource.getConnection();
             ResultSet rs = connection.createStatement().executeQuery("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
