package dev.outboxinbox.order.api;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;

/**
 * Money and stock are at stake: {@code "quantity": 1.7} or {@code "quantity": "3"} is a client
 * bug to report, not a value to guess at.
 */
@Singleton
public class StrictJson implements ObjectMapperCustomizer {

    @Override
    @SuppressWarnings("deprecation") // MapperFeature.ALLOW_COERCION_OF_SCALARS is still the switch in Jackson 2
    public void customize(ObjectMapper mapper) {
        mapper.disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT);
        mapper.enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
        mapper.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        mapper.configure(MapperFeature.ALLOW_COERCION_OF_SCALARS, false);
    }
}
