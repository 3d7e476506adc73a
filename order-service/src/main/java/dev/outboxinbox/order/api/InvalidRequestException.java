package dev.outboxinbox.order.api;

/** A request that Bean Validation cannot judge on its own (a header, a rule across lines). */
class InvalidRequestException extends RuntimeException {

    private final String field;

    InvalidRequestException(String field, String message) {
        super(message);
        this.field = field;
    }

    String field() {
        return field;
    }
}
