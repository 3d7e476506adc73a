package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import jakarta.transaction.Transactional;
import org.junit.jupiter.api.Test;

/**
 * The start-up check of @Inbox methods: a wrong signature stops the service instead of dead-lettering
 * every message. (The samples that should pass are the test service's real ones: Quarkus refuses
 * {@code @Blocking} on a method no framework calls.)
 */
class InboxMethodsTest {

    static class NoMetadata {
        @Inbox
        void handle(String payload) {
        }
    }

    static class OnTheEventLoop {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class InATransactionOfItsOwn {
        @Transactional
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class OutOfOrder {
        @io.smallrye.reactive.messaging.annotations.Blocking(ordered = false)
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class AckedBeforeItRuns {
        @org.eclipse.microprofile.reactive.messaging.Acknowledgment(
                org.eclipse.microprofile.reactive.messaging.Acknowledgment.Strategy.PRE_PROCESSING)
        @io.smallrye.reactive.messaging.annotations.Blocking
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @Inbox
    static class OnTheClass {
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @Test
    void onAClassItIsRefused() {
        assertThat(InboxMethods.problems(OnTheClass.class)).singleElement().asString()
                .contains("@Inbox on the class").contains("OnTheClass");
        assertThat(InboxMethods.problems(InboxInterceptor.class)).isEmpty();
    }

    @Test
    void aMethodWithTheMetadataOnAWorkerThreadPasses() {
        assertThat(InboxMethods.problems(GreetingConsumer.Greetings.class)).isEmpty();
        assertThat(InboxMethods.problems(GreetingConsumer.Farewells.class)).isEmpty();
    }

    @Test
    void aMethodWithoutTheMetadataIsRefused() {
        assertThat(InboxMethods.problems(NoMetadata.class)).anySatisfy(problem -> assertThat(problem)
                .contains("NoMetadata.handle needs an InboxMetadata parameter"));
    }

    @Test
    void aMethodThatWouldRunOnTheEventLoopIsRefused() {
        assertThat(InboxMethods.problems(OnTheEventLoop.class)).singleElement().asString()
                .contains("OnTheEventLoop.handle needs @Blocking");
    }

    @Test
    void aMethodCalledOutOfOrderIsRefused() {
        // Two calls at once would share the batch's transaction (and its connection) on two threads.
        assertThat(InboxMethods.problems(OutOfOrder.class)).singleElement().asString()
                .contains("OutOfOrder.handle must be called in order");
    }

    @Test
    void aMethodAckedBeforeItsCommitIsRefused() {
        assertThat(InboxMethods.problems(AckedBeforeItRuns.class)).singleElement().asString()
                .contains("@Acknowledgment(PRE_PROCESSING)").contains("AckedBeforeItRuns.handle");
    }

    @Test
    void aMethodWithATransactionOfItsOwnIsRefused() {
        // Its writes would commit in a transaction apart from the inbox row's: a crash between the two
        // commits would apply the message and forget it, or the other way round.
        assertThat(InboxMethods.problems(InATransactionOfItsOwn.class)).anySatisfy(problem -> assertThat(problem)
                .contains("@Transactional on @Inbox method").contains("InATransactionOfItsOwn.handle"));
    }
}
