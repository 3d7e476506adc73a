package dev.outboxinbox.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Every type the contract knows has an example, of its newest version, that its schema accepts and a consumer decodes. */
class EventExamplesTest {

    @Test
    void everyKnownTypeHasAValidExampleOfItsNewestVersion() throws Exception {
        assertThat(EventSchema.types()).isNotEmpty();
        for (String type : EventSchema.types()) {
            Event example = EventExamples.of(type);
            int newest = EventSchema.versions(type).last();
            assertThat(example.eventType()).isEqualTo(type);
            assertThat(example.schemaVersion()).as("%s's example is of its newest version", type).isEqualTo(newest);
            byte[] body = example.payloadJson().getBytes(StandardCharsets.UTF_8);
            assertThat(EventSchema.of(type, newest).orElseThrow().violations(body)).as("%s's example against its schema", type).isEmpty();
            assertThat(EventSchema.decode(example.eventId().toString(), type, newest, body, Event.class)).isEqualTo(example);
            assertThat(EventExamples.of(type).eventId()).as("a fresh event id each time").isNotEqualTo(example.eventId());
        }
    }

    @Test
    void anUnknownTypeIsRefusedNamingTheKnownOnes() {
        assertThatThrownBy(() -> EventExamples.of("OrderShipped")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("OrderCreated");
    }
}

