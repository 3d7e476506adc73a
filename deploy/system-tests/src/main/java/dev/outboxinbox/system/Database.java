package dev.outboxinbox.system;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/** A database as one role sees it. The harness reads with the services' own roles where it can. */
public record Database(String jdbcUrl, String user, String password) {

    public Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl, user, password);
    }

    @Override
    public String toString() {
        return user + "@" + jdbcUrl;
    }
}
