package dev.outboxinbox.inventory;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Plain SQL on the service's database: the tests check what was committed. */
@ApplicationScoped
public class InventoryDatabase {

    private final AgroalDataSource dataSource;

    InventoryDatabase(AgroalDataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** A product of the test's own, so tests never share stock. */
    public String newProduct(int onHand) {
        String sku = "TEST-" + UUID.randomUUID().toString().substring(0, 8);
        execute("INSERT INTO products (sku, name, on_hand) VALUES ('" + sku + "', 'test', " + onHand + ")");
        return sku;
    }

    public long count(String sql, Object... params) {
        try (Connection c = dataSource.getConnection(); PreparedStatement statement = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                statement.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? rs.getLong(1) : 0;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    /** Every SKU of the catalogue, in the database's own order. */
    public List<String> skus() {
        try (Connection c = dataSource.getConnection(); Statement statement = c.createStatement();
             ResultSet rs = statement.executeQuery("SELECT sku FROM products ORDER BY sku")) {
            List<String> skus = new ArrayList<>();
            while (rs.next()) {
                skus.add(rs.getString(1));
            }
            return skus;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    public long reserved(String sku) {
        return count("SELECT reserved FROM products WHERE sku = ?", sku);
    }

    public String status(UUID orderId) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement statement = c.prepareStatement("SELECT status FROM order_outcomes WHERE order_id = ?")) {
            statement.setObject(1, orderId);
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The types of the replies to an order in this service's outbox, oldest first. */
    public List<String> replies(UUID orderId) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement statement = c.prepareStatement("SELECT type FROM outbox WHERE aggregateid = ? ORDER BY occurred_at")) {
            statement.setString(1, orderId.toString());
            try (ResultSet rs = statement.executeQuery()) {
                List<String> types = new ArrayList<>();
                while (rs.next()) {
                    types.add(rs.getString(1));
                }
                return types;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The one reply to an order: its outbox row, column by column. */
    public Map<String, Object> reply(UUID orderId) {
        try (Connection c = dataSource.getConnection(); PreparedStatement statement = c.prepareStatement(
                "SELECT id, aggregatetype, type, schema_version, payload::text AS payload FROM outbox WHERE aggregateid = ?")) {
            statement.setString(1, orderId.toString());
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no reply to order " + orderId);
                }
                Map<String, Object> row = new HashMap<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    row.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                }
                if (rs.next()) {
                    throw new AssertionError("more than one reply to order " + orderId);
                }
                return row;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The one row the query finds, column by column. */
    public Map<String, Object> row(String sql, Object... params) {
        try (Connection c = dataSource.getConnection(); PreparedStatement statement = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                statement.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no row for " + sql);
                }
                Map<String, Object> row = new HashMap<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    row.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                }
                if (rs.next()) {
                    throw new AssertionError("more than one row for " + sql);
                }
                return row;
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
}
