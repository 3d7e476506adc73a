package dev.outboxinbox.order.domain;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** How long an {@code Idempotency-Key} is remembered (IDEMPOTENCY_KEYS_RETENTION, …). */
@ConfigMapping(prefix = "idempotency-keys")
public interface IdempotencyKeyConfig {

    /**
     * A key older than this is forgotten: a request with it places a new order. It must exceed the
     * longest time a client keeps retrying one request (the IETF draft suggests at least 24 hours).
     */
    @WithDefault("PT24H")
    Duration retention();

    /** How often expired keys are purged (also read by {@code IdempotencyKeyPurge}'s schedule). */
    @WithDefault("1m")
    String purgeInterval();

    /** The most keys one purge transaction deletes. */
    @WithDefault("10000")
    int purgeBatchSize();
}
