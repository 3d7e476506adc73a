package dev.outboxinbox.order.domain;

/** The client sent an Idempotency-Key it already used, with a different request. */
public class IdempotencyKeyReusedException extends RuntimeException {

    public IdempotencyKeyReusedException(String key) {
        super("Idempotency-Key '" + key + "' was already used for a different request");
    }
}
