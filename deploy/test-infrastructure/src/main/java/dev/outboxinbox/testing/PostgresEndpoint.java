package dev.outboxinbox.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/** A PostgreSQL server the tests may create databases on, reached as a superuser. */
public record PostgresEndpoint(String host, int port, String user, String password) {

    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + host + ":" + port + "/" + database;
    }

    public Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), user, password);
    }

    /**
     * Drops and creates a database, so that whatever an earlier run left behind (rows, slots'
     * publications, half-applied migrations) cannot leak into this one.
     */
    public void recreateDatabase(String name) {
        try (Connection admin = connect("postgres"); Statement sql = admin.createStatement()) {
            sql.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            sql.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not recreate database " + name + " on " + jdbcUrl("postgres"), e);
        }
    }
}
