package dev.outboxinbox.order.api;

import java.sql.SQLException;
import java.util.Optional;
import java.util.Set;

/**
 * A request that failed because it got no database connection. Each request of this service runs in one
 * transaction, which takes its connection at its first statement and keeps it to the end (a second
 * {@code getConnection()} in it returns the same, enlisted one), so a request that got none ran nothing: it is
 * refused with 503 and {@code Retry-After}, and the client knows that nothing was written (unlike a connection
 * lost later, whose commit may or may not have happened: 500, "unknown"). That holds only while no request runs a
 * second transaction ({@code REQUIRES_NEW}) after a first one wrote: one that does must not be answered from here.
 * The reason says what kind of failure it was, never the driver's words (they name hosts and ports); the log has those.
 */
final class NoDatabaseConnection {

    /** Agroal's words when every connection stayed busy for the acquisition timeout; it sets no SQLSTATE. */
    static final String POOL_EXHAUSTED = "Sorry, acquisition timeout!";
    /** Agroal's words when opening a new connection outlasted the acquisition timeout (a database that does not answer). */
    static final String CONNECTING_TIMED_OUT = "Acquisition timeout while waiting for new connection";
    /**
     * SQLSTATEs that come only from making a connection: the driver could not reach the server (08001), the
     * server refused it (08004), is starting up or shutting down (57P03), or has no connection slot left (53300).
     */
    private static final Set<String> CONNECTING = Set.of("08001", "08004", "57P03", "53300");

    private NoDatabaseConnection() {
    }

    /** @return why the request got no connection, or empty if it failed otherwise */
    static Optional<String> reason(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                if (POOL_EXHAUSTED.equals(sql.getMessage())) {
                    return Optional.of("every database connection stayed busy for the pool's acquisition timeout");
                }
                if (CONNECTING_TIMED_OUT.equals(sql.getMessage())
                        || sql.getSQLState() != null && CONNECTING.contains(sql.getSQLState())) {
                    return Optional.of("the database could not be reached");
                }
            }
        }
        return Optional.empty();
    }
}
