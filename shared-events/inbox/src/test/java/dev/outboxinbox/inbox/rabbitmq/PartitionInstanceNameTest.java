package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The instances find each other by their lock sessions' application_name, which PostgreSQL cuts at 63
 * bytes: a name that did not fit would never be found among the members, and its instance would
 * read nothing, for ever. So a configured name must fit whole, and the default is made to fit.
 */
class PartitionInstanceNameTest {

    private static final String PREFIX = "inbox/inventory-service/";

    @Test
    void aConfiguredNameThatFitsIsKeptAsItIs() {
        assertThat(PartitionAssignment.instanceName(Optional.of("inventory-service-7d9f8b6c5d-x2x4z"), PREFIX))
                .isEqualTo("inventory-service-7d9f8b6c5d-x2x4z");
    }

    @Test
    void aConfiguredNameTooLongForTheApplicationNameIsRefusedAtStart() {
        String tooLong = "x".repeat(63 - PREFIX.length() + 1);
        assertThatThrownBy(() -> PartitionAssignment.instanceName(Optional.of(tooLong), PREFIX))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must be 1 to 39 bytes");
        assertThatThrownBy(() -> PartitionAssignment.instanceName(Optional.of(" "), PREFIX))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theDefaultHostAndPidFitsEvenBehindALongConsumerName() {
        String longPrefix = "inbox/" + "c".repeat(40) + "/";
        String name = PartitionAssignment.instanceName(Optional.empty(), longPrefix);
        assertThat((longPrefix + name).getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(63);
        assertThat(name).endsWith("/" + ProcessHandle.current().pid());
        assertThatThrownBy(() -> PartitionAssignment.instanceName(Optional.empty(), "inbox/" + "c".repeat(64) + "/"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("set inbox.partitioning.instance");
    }
}
