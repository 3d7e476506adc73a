package dev.outboxinbox.events;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;

/**
 * The one JSON encoding of events. Producer and consumers share it so that "what the producer
 * serialises" is exactly what the contract test validates against the schema.
 */
public final class EventJson {

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .addModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            // A price as "1000000.00", never "1.00000000E+6": what the schemas' patterns say.
            .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            // A tolerant reader: a producer may add optional fields without breaking consumers.
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .build();

    private EventJson() {
    }

    public static String write(Event event) {
        try {
            return MAPPER.writeValueAsString(event);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("An event record could not be serialised: " + event, e);
        }
    }

    /** @throws IOException when the bytes are not JSON of the given shape */
    public static <T extends Event> T read(byte[] json, Class<T> type) throws IOException {
        return MAPPER.readValue(json, type);
    }

    static ObjectMapper mapper() {
        return MAPPER;
    }
}
