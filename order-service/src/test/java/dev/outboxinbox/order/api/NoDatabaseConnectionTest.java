package dev.outboxinbox.order.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/** Which failures mean that a request got no connection (503, nothing written), and which do not (500, unknown). */
class NoDatabaseConnectionTest {

    @Test
    void aConnectionThatCouldNotBeMadeOrTakenIsNoConnection() {
        assertThat(NoDatabaseConnection.reason(wrapped(new SQLException(NoDatabaseConnection.POOL_EXHAUSTED))))
                .hasValueSatisfying(reason -> assertThat(reason).contains("acquisition timeout"));
        // The driver's words name the host and port: the reason, which the client reads, does not.
        assertThat(NoDatabaseConnection.reason(wrapped(new SQLException("Connection to db.internal:5432 refused", "08001"))))
                .hasValue("the database could not be reached");
        assertThat(NoDatabaseConnection.reason(wrapped(new SQLException("the server rejected the connection", "08004"))))
                .isPresent();
        assertThat(NoDatabaseConnection.reason(wrapped(new SQLException(NoDatabaseConnection.CONNECTING_TIMED_OUT))))
                .hasValue("the database could not be reached");
        assertThat(NoDatabaseConnection.reason(new SQLException("the database system is starting up", "57P03"))).isPresent();
        assertThat(NoDatabaseConnection.reason(new SQLException("too many clients already", "53300"))).isPresent();
    }

    @Test
    void aConnectionLostOnTheWayOrAnyOtherFailureIsNot() {
        // Lost during the transaction, perhaps during COMMIT: whether it committed is unknown.
        assertThat(NoDatabaseConnection.reason(wrapped(new SQLException("An I/O error occurred", "08006")))).isEmpty();
        assertThat(NoDatabaseConnection.reason(new SQLException("terminating connection due to administrator command", "57P01")))
                .isEmpty();
        assertThat(NoDatabaseConnection.reason(new SQLException("duplicate key", "23505"))).isEmpty();
        assertThat(NoDatabaseConnection.reason(new IllegalStateException("no SQL at all"))).isEmpty();
    }

    private static RuntimeException wrapped(SQLException cause) {
        return new RuntimeException("order insert failed: " + cause.getMessage(), cause);
    }
}
