package dev.outboxinbox.inbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A consumer name the inbox column cannot hold stops the service at start, not every batch forever. */
class InboxConsumerNameTest {

    @ParameterizedTest
    @ValueSource(strings = {"", "  ", "a-consumer-name-of-sixty-five-characters-is-one-too-long-for-it-x"})
    void aNameTheInboxCannotHoldIsRefusedAtStart(String name) {
        assertThatThrownBy(() -> new InboxHandler(null, null, name, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 64 characters");
    }
}
