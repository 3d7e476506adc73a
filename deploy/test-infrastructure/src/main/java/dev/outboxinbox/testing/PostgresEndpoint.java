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

    /** Runs statements as the superuser, in autocommit. */
    public void execute(String database, String... statements) {
        try (Connection c = connect(database); Statement sql = c.createStatement()) {
            for (String statement : statements) {
                sql.execute(statement);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("On " + database + ": " + String.join("; ", statements), e);
        }
    }

    /** The first column of the first row, as text (null if there is no row). */
    public String query(String database, String sql) {
        try (Connection c = connect(database); Statement statement = c.createStatement();
             java.sql.ResultSet rs = statement.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            throw new IllegalStateException("On " + database + ": " + sql, e);
        }
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
            // A logical slot belongs to its database and blocks DROP DATABASE; a test's slot dies with its database.
            sql.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '" + name + "'");
            sql.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            sql.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not recreate database " + name + " on " + jdbcUrl("postgres"), e);
        }
    }
}
