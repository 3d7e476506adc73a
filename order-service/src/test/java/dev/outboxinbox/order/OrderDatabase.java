package dev.outboxinbox.order;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;

/** Plain SQL on the service's database, so the tests check what was committed, not what the service says. */
@ApplicationScoped
public class OrderDatabase {

    private final AgroalDataSource dataSource;

    OrderDatabase(AgroalDataSource dataSource) {
        this.dataSource = dataSource;
    }

    public long count(String sql, Object... params) {
        return ((Number) rows(sql, params).get(0).values().iterator().next()).longValue();
    }

    public List<Map<String, Object>> rows(String sql, Object... params) {
        try (Connection c = dataSource.getConnection(); PreparedStatement statement = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                statement.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = statement.executeQuery()) {
                List<Map<String, Object>> rows = new ArrayList<>();
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int column = 1; column <= rs.getMetaData().getColumnCount(); column++) {
                        row.put(rs.getMetaData().getColumnLabel(column), rs.getObject(column));
                    }
                    rows.add(row);
                }
                return rows;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    public void execute(String sql) {
        try (Connection c = dataSource.getConnection(); Statement statement = c.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    public long orders() {
        return count("SELECT count(*) FROM orders");
    }

    public long outboxRows() {
        return count("SELECT count(*) FROM outbox");
    }
}
