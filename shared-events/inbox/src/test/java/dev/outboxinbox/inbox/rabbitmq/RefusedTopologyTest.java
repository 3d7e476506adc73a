package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;
import org.junit.jupiter.api.Test;

/**
 * A broker that refuses the consumer's topology (here a hand-made classic queue where the consumer
 * declares a quorum one: 406 PRECONDITION_FAILED; a 403 or a missing plugin fail the same way) is a
 * misconfiguration, not an outage: every failed start closes what it opened, so the consumer holds at
 * most one connection however long it fails, readiness says what the broker said, and once the cause
 * is fixed the consumer starts and consumes without a restart.
 */
@QuarkusTest
@WithTestResource(value = ConsumerTestResource.class, initArgs = {
        @ResourceArg(name = "database", value = "inbox_refused_topology_test"),
        @ResourceArg(name = "virtualHost", value = RefusedTopologyTest.VHOST),
        @ResourceArg(name = "conflictingQueue", value = RefusedTopologyTest.QUEUE)})
class RefusedTopologyTest {

    static final String VHOST = "inbox-refused-topology-test";
    static final String QUEUE = "greetings.inbox-test";
    /** The refused channel's consumer name, which its connections are opened under. */
    static final String CONSUMER = "greeting-consumer.greetings";

    private final TestBroker broker = new TestBroker(VHOST);

    @Inject
    @Readiness
    ConsumerReadiness readiness;

    @Inject
    DataSource dataSource;

    @Test
    void aRefusedDeclarationLeaksNoConnectionIsShownWithTheBrokersWordsAndStartsOnceFixed() throws Exception {
        AtomicInteger most = new AtomicInteger();
        // Several failed starts (backoff 0.5 s doubling to 5 s): each one's connection must be gone before the next.
        await().during(Duration.ofSeconds(15)).atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500))
                .until(() -> most.accumulateAndGet(broker.connections(CONSUMER), Math::max) >= 0);
        System.out.printf("RefusedTopologyTest: at most %d broker connection(s) of " + CONSUMER + " in %s during 15 s of failed starts%n", most.get(), VHOST);
        assertThat(most.get()).as("connections held by the consumer while it fails to start").isLessThanOrEqualTo(1);

        HealthCheckResponse refused = readiness.call();
        assertThat(refused.getStatus()).isEqualTo(HealthCheckResponse.Status.DOWN);
        String problem = String.valueOf(refused.getData().orElseThrow().get("problem"));
        System.out.printf("RefusedTopologyTest: readiness says: %s%n", problem);
        assertThat(problem).as("the broker's own words").contains("PRECONDITION_FAILED").contains("inequivalent arg")
                .contains(QUEUE);

        broker.deleteQueue(QUEUE);
        await().atMost(Duration.ofSeconds(30)).until(() -> readiness.call().getStatus() == HealthCheckResponse.Status.UP);
        String id = UUID.randomUUID().toString();
        broker.publishGreeting(id, "once the queue is fixed");
        await().atMost(Duration.ofSeconds(30)).until(() -> greetings(id) == 1);
        // The greetings consumer's, the test's closed; the farewells channel, never refused, has its own all along.
        await().atMost(Duration.ofSeconds(10)).until(() -> broker.connections() == 2 && broker.connections(CONSUMER) == 1);
    }

    private long greetings(String id) throws Exception {
        try (java.sql.Connection connection = dataSource.getConnection();
             ResultSet rs = connection.createStatement().executeQuery("SELECT count(*) FROM greetings WHERE message_id = '" + id + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
