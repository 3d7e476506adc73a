package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import jakarta.transaction.Transactional;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The start-up check of @Inbox methods: a wrong signature stops the service instead of dead-lettering
 * every message. (The samples are on classes, or SmallRye Reactive Messaging's own {@code @Blocking}:
 * Quarkus refuses {@code io.smallrye.common.annotation}'s on a method no framework calls, and the
 * method-level samples that should pass are the test service's real ones.)
 */
class InboxMethodsTest {

    static class NoMetadata {
        @Inbox
        void handle(String payload) {
        }
    }

    /** No annotation: Quarkus calls a void method on a worker thread. */
    static class HandedToAWorker {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class OnAWorker {
        @io.smallrye.reactive.messaging.annotations.Blocking
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @io.smallrye.common.annotation.Blocking
    static class OnAWorkerByItsClass {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @io.smallrye.common.annotation.NonBlocking
    static class OnTheChannelsThreadByItsClass {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @io.smallrye.common.annotation.RunOnVirtualThread
    static class OnAVirtualThread {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @io.smallrye.common.annotation.NonBlocking
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

    @io.smallrye.common.annotation.NonBlocking
    static class AckedBeforeItRuns {
        @org.eclipse.microprofile.reactive.messaging.Acknowledgment(
                org.eclipse.microprofile.reactive.messaging.Acknowledgment.Strategy.PRE_PROCESSING)
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class LookingAheadForNobody implements InboxLookahead<String> {
        @Override
        public void lookahead(List<String> payloads) {
        }
    }

    @io.smallrye.common.annotation.NonBlocking
    static class LookingAheadForTwoChannels implements InboxLookahead<String> {
        @Override
        public void lookahead(List<String> payloads) {
        }

        // The channels they read are given to the check by name (a real @Incoming here would be wired by SmallRye).
        @Inbox
        void one(String payload, InboxMetadata inbox) {
        }

        @Inbox
        void two(String payload, InboxMetadata inbox) {
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
    void aMethodWithTheMetadataOnTheChannelsThreadPasses() {
        assertThat(InboxMethods.problems(GreetingConsumer.Greetings.class)).isEmpty();
        assertThat(InboxMethods.problems(GreetingConsumer.Farewells.class)).isEmpty();
        assertThat(InboxMethods.problems(OnTheChannelsThreadByItsClass.class)).isEmpty();
    }

    @Test
    void aLookAheadWithoutAnInboxMethodBesideItIsRefused() {
        assertThat(InboxMethods.problems(LookingAheadForNobody.class)).singleElement().asString()
                .contains("LookingAheadForNobody is an InboxLookahead without an @Incoming @Inbox method");
        assertThat(InboxMethods.problems(LookingAheadForTwoChannels.class, method -> List.of(method.getName())))
                .singleElement().asString()
                .contains("LookingAheadForTwoChannels is an InboxLookahead beside @Inbox methods of several channels [one, two]");
    }

    @Test
    void aMethodWithoutTheMetadataIsRefused() {
        assertThat(InboxMethods.problems(NoMetadata.class)).anySatisfy(problem -> assertThat(problem)
                .contains("NoMetadata.handle needs an InboxMetadata parameter"));
    }

    @Test
    void aMethodLeftToQuarkussDefaultIsRefused() {
        // A void method would be handed to a worker thread and back, two hand-offs a message.
        assertThat(InboxMethods.problems(HandedToAWorker.class)).singleElement().asString()
                .contains("HandedToAWorker.handle needs @NonBlocking");
    }

    @Test
    void aMethodHandedToAnotherThreadIsRefused() {
        // A worker pool costs hand-offs; out of order, two calls at once would share the batch's transaction
        // (and its connection) on two threads.
        for (Class<?> type : List.of(OnAWorker.class, OnAWorkerByItsClass.class, OutOfOrder.class, OnAVirtualThread.class)) {
            assertThat(InboxMethods.problems(type)).as(type.getSimpleName()).singleElement().asString()
                    .contains(type.getName() + ".handle must not be @Blocking or @RunOnVirtualThread");
        }
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
