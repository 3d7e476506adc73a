package dev.outboxinbox.events;

/**
 * The two roles every service's operations endpoints and {@code /q/metrics} answer to (deploy/OPERATIONS.md,
 * "Operations"), and how a refusal reads, the same in every service: the libraries put the roles on
 * their endpoints, each service says who holds them and renders the refusal as its problem document.
 */
public final class OperationsRoles {

    /** Reads payloads (dead letters whole) and re-drives: dead letters, parked events. */
    public static final String OPERATOR = "operator";
    /** Reads {@code /q/metrics} and the summaries (counts, ids, reasons), never a payload. */
    public static final String MONITOR = "monitor";

    /** The {@code WWW-Authenticate} challenge of a 401. */
    public static final String CHALLENGE = "Basic realm=\"operations\"";
    public static final String UNAUTHORIZED =
            "These endpoints are for operators: send HTTP Basic credentials with the role they need (README, \"Operations\").";
    public static final String FORBIDDEN = "These credentials lack the role this endpoint needs (README, \"Operations\").";

    private OperationsRoles() {
    }
}
