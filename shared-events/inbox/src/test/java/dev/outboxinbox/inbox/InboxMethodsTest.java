package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import jakarta.transaction.Transactional;
import org.junit.jupiter.api.Test;

/**
 * The start-up check of @Inbox methods: a wrong signature stops the service instead of dead-lettering
 * every message. (The samples use @Transactional: Quarkus refuses @Blocking on a method no framework calls.)
 */
class InboxMethodsTest {

    static class Right {
        @Transactional
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    static class NoMetadata {
        @Transactional
        @Inbox
        void handle(String payload) {
        }
    }

    static class OnTheEventLoop {
        @Inbox
        void handle(String payload, InboxMetadata inbox) {
        }
    }

    @Inbox
    static class OnTheClass {
        @Transactional
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
        assertThat(InboxMethods.problems(Right.class)).isEmpty();
        assertThat(InboxMethods.problems(GreetingConsumer.Greetings.class)).isEmpty();
    }

    @Test
    void aMethodWithoutTheMetadataIsRefused() {
        assertThat(InboxMethods.problems(NoMetadata.class)).singleElement().asString()
                .contains("NoMetadata.handle needs an InboxMetadata parameter");
    }

    @Test
    void aMethodThatWouldRunOnTheEventLoopIsRefused() {
        assertThat(InboxMethods.problems(OnTheEventLoop.class)).singleElement().asString()
                .contains("OnTheEventLoop.handle needs @Blocking");
    }
}
