// pgjdbc (the PostgreSQL JDBC driver of DBeaver, DataGrip, Metabase and
// Tableau) against a running server.
//
// Usage (single-file source launch, no build tool):
//   java -cp /usr/share/java/postgresql.jar tests/drivers/jdbc/JdbcCheck.java [HOST] PORT
// (Debian 12: `apt-get install default-jdk-headless libpostgresql-jdbc-java`;
// HOST defaults to 127.0.0.1; user and database are `ripple`, no password.)
//
// What pgjdbc sends: DatabaseMetaData calls are long catalog queries over
// pg_class, pg_namespace, pg_attribute, pg_type, pg_index, pg_constraint,
// pg_description and pg_attrdef; ResultSetMetaData reads the table OID and
// column number of each RowDescription field and then asks pg_attribute and
// pg_class about them. Every query goes through the extended protocol on the
// unnamed statement, except that a PreparedStatement executed a fifth time
// (prepareThreshold) becomes a named server-side statement. With autocommit
// off and a fetch size, a query is a portal read with Execute(max_rows).
//
// Each check prints `ok` or `FAIL` and the program exits 1 if any failed.
// CHECK_ONLY=<substring> runs the checks whose names contain it.

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.postgresql.PGResultSetMetaData;

public class JdbcCheck {
    static String url;

    interface Check {
        void run(Connection c) throws Exception;
    }

    static Connection connect() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "ripple");
        p.setProperty("connectTimeout", "30");
        p.setProperty("socketTimeout", "60");
        return DriverManager.getConnection(url, p);
    }

    static void check(boolean cond, String what) {
        if (!cond) {
            throw new AssertionError(what);
        }
    }

    static void eq(Object actual, Object expected, String what) {
        if (expected == null ? actual != null : !expected.equals(actual)) {
            throw new AssertionError(what + ": expected <" + expected + "> but got <" + actual + ">");
        }
    }

    /** Every row of `rs` as column label -> value (as getObject). */
    static List<Map<String, Object>> rows(ResultSet rs) throws SQLException {
        List<Map<String, Object>> out = new ArrayList<>();
        ResultSetMetaData md = rs.getMetaData();
        while (rs.next()) {
            Map<String, Object> row = new LinkedHashMap<>();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                row.put(md.getColumnLabel(i).toUpperCase(), rs.getObject(i));
            }
            out.add(row);
        }
        rs.close();
        return out;
    }

    static List<Object> column(List<Map<String, Object>> rows, String name) {
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> r : rows) {
            out.add(r.get(name));
        }
        return out;
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            check(rs.next(), "a row from " + sql);
            return rs.getLong(1);
        }
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static final String[] SETUP = {
        "DROP MATERIALIZED VIEW IF EXISTS jdbc_mv",
        "DROP VIEW IF EXISTS jdbc_v",
        "DROP TABLE IF EXISTS jdbc_items",
        "DROP TABLE IF EXISTS jdbc_batch",
        "CREATE TABLE jdbc_items (id integer PRIMARY KEY, name varchar(40) NOT NULL, "
            + "price numeric(10,2), qty integer, note text)",
        "CREATE UNIQUE INDEX jdbc_items_name ON jdbc_items (name)",
        "CREATE INDEX jdbc_items_qty ON jdbc_items (qty)",
        "CREATE VIEW jdbc_v AS SELECT id, name, price * qty AS total FROM jdbc_items",
        "CREATE MATERIALIZED VIEW jdbc_mv AS SELECT count(*) AS n, sum(qty) AS q FROM jdbc_items",
        "COMMENT ON TABLE jdbc_items IS 'things for sale'",
        "COMMENT ON COLUMN jdbc_items.price IS 'unit price'",
        "INSERT INTO jdbc_items VALUES (1, 'pen', 1.50, 10, NULL), (2, 'ink', 7.25, 3, 'blue')",
        "CREATE TABLE jdbc_batch (k integer NOT NULL, v text)",
    };

    static final Map<String, Check> CHECKS = new LinkedHashMap<>();

    static {
        CHECKS.put("connect and product", c -> {
            DatabaseMetaData md = c.getMetaData();
            eq(md.getDatabaseProductName(), "PostgreSQL", "getDatabaseProductName");
            check(md.getDatabaseProductVersion().startsWith("15"), "product version 15.x: " + md.getDatabaseProductVersion());
            eq(md.getDatabaseMajorVersion(), 15, "getDatabaseMajorVersion");
            eq(md.getUserName(), "ripple", "getUserName");
            eq(c.getCatalog(), "ripple", "getCatalog");
            eq(c.getSchema(), "public", "getSchema");
            check(md.getDriverName().contains("PostgreSQL"), "driver name");
        });

        CHECKS.put("getTables by type", c -> {
            DatabaseMetaData md = c.getMetaData();
            List<Map<String, Object>> t = rows(md.getTables(null, "public", "jdbc_%", new String[] {"TABLE"}));
            eq(column(t, "TABLE_NAME"), List.of("jdbc_batch", "jdbc_items"), "tables");
            eq(t.get(1).get("TABLE_TYPE"), "TABLE", "TABLE_TYPE of a table");
            eq(t.get(1).get("TABLE_SCHEM"), "public", "TABLE_SCHEM");
            eq(t.get(1).get("REMARKS"), "things for sale", "REMARKS (COMMENT ON TABLE)");
            List<Map<String, Object>> v = rows(md.getTables(null, "public", "jdbc_%", new String[] {"VIEW"}));
            eq(column(v, "TABLE_NAME"), List.of("jdbc_v"), "views");
            eq(v.get(0).get("TABLE_TYPE"), "VIEW", "TABLE_TYPE of a view");
            List<Map<String, Object>> m =
                rows(md.getTables(null, "public", "jdbc_%", new String[] {"MATERIALIZED VIEW"}));
            eq(column(m, "TABLE_NAME"), List.of("jdbc_mv"), "materialized views");
            eq(m.get(0).get("TABLE_TYPE"), "MATERIALIZED VIEW", "TABLE_TYPE of a materialized view");
            // All types at once (what DBeaver's navigator asks for), then the indexes.
            List<Map<String, Object>> all = rows(md.getTables(null, "public", "jdbc_%", null));
            check(column(all, "TABLE_NAME").containsAll(List.of("jdbc_items", "jdbc_v", "jdbc_mv")), "all: " + all);
            List<Map<String, Object>> idx = rows(md.getTables(null, "public", "jdbc_items%", new String[] {"INDEX"}));
            check(column(idx, "TABLE_NAME").containsAll(List.of("jdbc_items_name", "jdbc_items_qty")), "indexes: " + idx);
            // getTableTypes lists the types getTables accepts.
            List<Object> types = column(rows(md.getTableTypes()), "TABLE_TYPE");
            check(types.containsAll(List.of("TABLE", "VIEW", "MATERIALIZED VIEW")), "getTableTypes: " + types);
        });

        CHECKS.put("getColumns", c -> {
            DatabaseMetaData md = c.getMetaData();
            List<Map<String, Object>> cols = rows(md.getColumns(null, "public", "jdbc_items", null));
            eq(column(cols, "COLUMN_NAME"), List.of("id", "name", "price", "qty", "note"), "names");
            eq(column(cols, "ORDINAL_POSITION"), List.of(1, 2, 3, 4, 5), "ordinal positions");
            eq(column(cols, "DATA_TYPE"),
                List.of(Types.INTEGER, Types.VARCHAR, Types.NUMERIC, Types.INTEGER, Types.VARCHAR), "DATA_TYPE");
            eq(column(cols, "TYPE_NAME"), List.of("int4", "varchar", "numeric", "int4", "text"), "TYPE_NAME");
            eq(cols.get(1).get("COLUMN_SIZE"), 40, "COLUMN_SIZE of varchar(40)");
            eq(cols.get(2).get("COLUMN_SIZE"), 10, "COLUMN_SIZE of numeric(10,2)");
            eq(cols.get(2).get("DECIMAL_DIGITS"), 2, "DECIMAL_DIGITS of numeric(10,2)");
            eq(cols.get(0).get("COLUMN_SIZE"), 10, "COLUMN_SIZE of integer");
            eq(column(cols, "NULLABLE"),
                List.of(DatabaseMetaData.columnNoNulls, DatabaseMetaData.columnNoNulls, DatabaseMetaData.columnNullable,
                    DatabaseMetaData.columnNullable, DatabaseMetaData.columnNullable), "NULLABLE");
            eq(column(cols, "IS_NULLABLE"), List.of("NO", "NO", "YES", "YES", "YES"), "IS_NULLABLE");
            eq(column(cols, "IS_AUTOINCREMENT"), List.of("NO", "NO", "NO", "NO", "NO"), "IS_AUTOINCREMENT");
            eq(cols.get(2).get("REMARKS"), "unit price", "REMARKS (COMMENT ON COLUMN)");
            eq(cols.get(0).get("COLUMN_DEF"), null, "COLUMN_DEF");
            // One column by pattern, and the columns of a view and a materialized view.
            List<Map<String, Object>> one = rows(md.getColumns(null, "public", "jdbc_items", "pri%"));
            eq(column(one, "COLUMN_NAME"), List.of("price"), "column name pattern");
            eq(column(rows(md.getColumns(null, "public", "jdbc_v", null)), "COLUMN_NAME"),
                List.of("id", "name", "total"), "view columns");
            List<Map<String, Object>> mv = rows(md.getColumns(null, "public", "jdbc_mv", null));
            eq(column(mv, "COLUMN_NAME"), List.of("n", "q"), "materialized view columns");
            eq(column(mv, "TYPE_NAME"), List.of("int8", "int8"), "materialized view column types");
        });

        CHECKS.put("getPrimaryKeys", c -> {
            List<Map<String, Object>> pk = rows(c.getMetaData().getPrimaryKeys(null, "public", "jdbc_items"));
            eq(pk.size(), 1, "one key column: " + pk);
            eq(pk.get(0).get("COLUMN_NAME"), "id", "COLUMN_NAME");
            eq(((Number) pk.get(0).get("KEY_SEQ")).intValue(), 1, "KEY_SEQ");
            eq(pk.get(0).get("PK_NAME"), "jdbc_items_pkey", "PK_NAME");
            eq(pk.get(0).get("TABLE_NAME"), "jdbc_items", "TABLE_NAME");
            eq(rows(c.getMetaData().getPrimaryKeys(null, "public", "jdbc_batch")).size(), 0, "no key");
        });

        CHECKS.put("getIndexInfo", c -> {
            List<Map<String, Object>> all = rows(c.getMetaData().getIndexInfo(null, "public", "jdbc_items", false, false));
            Map<Object, Map<String, Object>> byName = new LinkedHashMap<>();
            for (Map<String, Object> r : all) {
                byName.put(r.get("INDEX_NAME"), r);
            }
            eq(byName.keySet(), new java.util.LinkedHashSet<>(List.of("jdbc_items_name", "jdbc_items_pkey", "jdbc_items_qty")),
                "index names (in order of NON_UNIQUE, then name)");
            eq(byName.get("jdbc_items_pkey").get("NON_UNIQUE"), false, "primary key index is unique");
            eq(byName.get("jdbc_items_pkey").get("COLUMN_NAME"), "id", "primary key index column");
            eq(byName.get("jdbc_items_name").get("NON_UNIQUE"), false, "unique index");
            eq(byName.get("jdbc_items_name").get("COLUMN_NAME"), "name", "unique index column");
            eq(byName.get("jdbc_items_qty").get("NON_UNIQUE"), true, "non-unique index");
            eq(byName.get("jdbc_items_qty").get("COLUMN_NAME"), "qty", "non-unique index column");
            eq(((Number) byName.get("jdbc_items_qty").get("ORDINAL_POSITION")).intValue(), 1, "ORDINAL_POSITION");
            eq(byName.get("jdbc_items_qty").get("ASC_OR_DESC"), "A", "ASC_OR_DESC");
            eq(((Number) byName.get("jdbc_items_qty").get("TYPE")).intValue(), (int) DatabaseMetaData.tableIndexOther, "TYPE");
            List<Map<String, Object>> unique = rows(c.getMetaData().getIndexInfo(null, "public", "jdbc_items", true, false));
            eq(column(unique, "INDEX_NAME"), List.of("jdbc_items_name", "jdbc_items_pkey"), "unique only");
        });

        CHECKS.put("getSchemas, getCatalogs, getTypeInfo, getImportedKeys", c -> {
            DatabaseMetaData md = c.getMetaData();
            List<Object> schemas = column(rows(md.getSchemas()), "TABLE_SCHEM");
            check(schemas.containsAll(List.of("public", "pg_catalog", "information_schema")), "getSchemas: " + schemas);
            eq(column(rows(md.getSchemas(null, "pub%")), "TABLE_SCHEM"), List.of("public"), "getSchemas(pattern)");
            eq(column(rows(md.getCatalogs()), "TABLE_CAT"), List.of("ripple"), "getCatalogs");
            Map<Object, Map<String, Object>> types = new LinkedHashMap<>();
            for (Map<String, Object> r : rows(md.getTypeInfo())) {
                types.put(r.get("TYPE_NAME"), r);
            }
            for (String t : List.of("int4", "int8", "text", "varchar", "numeric", "bool", "timestamptz", "jsonb")) {
                check(types.containsKey(t), "getTypeInfo has " + t + ": " + types.keySet());
            }
            eq(types.get("int4").get("DATA_TYPE"), Types.INTEGER, "int4 DATA_TYPE");
            eq(types.get("varchar").get("DATA_TYPE"), Types.VARCHAR, "varchar DATA_TYPE");
            eq(types.get("numeric").get("DATA_TYPE"), Types.NUMERIC, "numeric DATA_TYPE");
            // ripple refuses FOREIGN KEY, so there are none to find; the queries must still run.
            eq(rows(md.getImportedKeys(null, "public", "jdbc_items")).size(), 0, "getImportedKeys");
            eq(rows(md.getExportedKeys(null, "public", "jdbc_items")).size(), 0, "getExportedKeys");
            // Functions and procedures: the queries run (ripple lists no user functions).
            rows(md.getProcedures(null, "public", "jdbc%"));
            rows(md.getFunctions(null, "public", "jdbc%"));
            rows(md.getTablePrivileges(null, "public", "jdbc_items"));
            rows(md.getColumnPrivileges(null, "public", "jdbc_items", "%"));
            rows(md.getBestRowIdentifier(null, "public", "jdbc_items", DatabaseMetaData.bestRowSession, true));
            rows(md.getVersionColumns(null, "public", "jdbc_items"));
        });

        CHECKS.put("ResultSetMetaData", c -> {
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT id, name, price, qty + 1 AS q1, i.note AS remark FROM jdbc_items i ORDER BY id")) {
                ResultSetMetaData md = rs.getMetaData();
                eq(md.getColumnCount(), 5, "column count");
                eq(md.getTableName(1), "jdbc_items", "getTableName of a column");
                eq(md.getTableName(4), "", "getTableName of an expression");
                // pgjdbc's getSchemaName is always "" (as getCatalogName); the
                // schema and table a column comes from are its base names.
                eq(md.getSchemaName(1), "", "getSchemaName");
                PGResultSetMetaData pg = md.unwrap(PGResultSetMetaData.class);
                eq(pg.getBaseSchemaName(1), "public", "getBaseSchemaName");
                eq(pg.getBaseTableName(1), "jdbc_items", "getBaseTableName");
                eq(pg.getBaseColumnName(5), "note", "getBaseColumnName of an aliased column");
                eq(pg.getBaseColumnName(4), "", "getBaseColumnName of an expression");
                eq(md.getColumnName(2), "name", "getColumnName");
                eq(md.getColumnLabel(4), "q1", "getColumnLabel");
                eq(md.getColumnLabel(5), "remark", "getColumnLabel of an aliased column");
                eq(md.getColumnName(5), "remark", "getColumnName (pgjdbc returns the label)");
                eq(md.getColumnType(3), Types.NUMERIC, "getColumnType");
                eq(md.getColumnTypeName(2), "varchar", "getColumnTypeName");
                eq(md.isNullable(1), ResultSetMetaData.columnNoNulls, "isNullable of a NOT NULL column");
                eq(md.isNullable(3), ResultSetMetaData.columnNullable, "isNullable of a nullable column");
                eq(md.getPrecision(3), 10, "getPrecision of numeric(10,2)");
                eq(md.getScale(3), 2, "getScale of numeric(10,2)");
                eq(md.getPrecision(2), 40, "getPrecision of varchar(40)");
                eq(md.isAutoIncrement(1), false, "isAutoIncrement");
                eq(md.getColumnClassName(3), "java.math.BigDecimal", "getColumnClassName");
                check(rs.next(), "first row");
                eq(rs.getInt(1), 1, "id");
                eq(rs.getBigDecimal(3), new BigDecimal("1.50"), "price");
                eq(rs.getInt("q1"), 11, "q1");
            }
            // A column read through a view keeps its origin: the view's OID and column.
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT name, total FROM jdbc_v")) {
                eq(rs.getMetaData().getTableName(1), "jdbc_v", "getTableName through a view");
                eq(rs.getMetaData().getTableName(2), "jdbc_v", "getTableName of a view's computed column");
            }
        });

        CHECKS.put("PreparedStatement past prepareThreshold", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id, name FROM jdbc_items WHERE id = ? AND name <> ?")) {
                for (int i = 0; i < 8; i++) {
                    ps.setInt(1, 1 + i % 2);
                    ps.setString(2, "none");
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "a row at execution " + i);
                        eq(rs.getString(2), i % 2 == 0 ? "pen" : "ink", "name at execution " + i);
                        eq(rs.getMetaData().getTableName(2), "jdbc_items", "getTableName at execution " + i);
                        check(!rs.next(), "one row at execution " + i);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_batch (k, v) VALUES (?, ?)")) {
                for (int i = 0; i < 7; i++) {
                    ps.setInt(1, 1000 + i);
                    ps.setString(2, i % 3 == 0 ? null : "p" + i);
                    eq(ps.executeUpdate(), 1, "insert count at execution " + i);
                }
            }
            eq(count(c, "SELECT count(*) FROM jdbc_batch WHERE k >= 1000"), 7L, "prepared inserts");
            eq(count(c, "SELECT count(*) FROM jdbc_batch WHERE k >= 1000 AND v IS NULL"), 3L, "NULL parameters");
            exec(c, "DELETE FROM jdbc_batch WHERE k >= 1000");
        });

        CHECKS.put("batch inserts", c -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_batch (k, v) VALUES (?, ?)")) {
                for (int i = 0; i < 50; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "row " + i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                eq(counts.length, 50, "executeBatch results");
                for (int n : counts) {
                    check(n == 1 || n == Statement.SUCCESS_NO_INFO, "batch count " + n);
                }
            }
            try (Statement s = c.createStatement()) {
                s.addBatch("INSERT INTO jdbc_batch VALUES (100, 'a')");
                s.addBatch("UPDATE jdbc_batch SET v = 'b' WHERE k = 100");
                s.addBatch("DELETE FROM jdbc_batch WHERE k = 100");
                int[] counts = s.executeBatch();
                eq(counts.length, 3, "statement batch results");
            }
            eq(count(c, "SELECT count(*) FROM jdbc_batch"), 50L, "rows after the batches");
        });

        CHECKS.put("transactions", c -> {
            c.setAutoCommit(false);
            exec(c, "INSERT INTO jdbc_items VALUES (10, 'cap', 0.10, 1, NULL)");
            eq(count(c, "SELECT count(*) FROM jdbc_items WHERE id = 10"), 1L, "own write visible");
            c.rollback();
            eq(count(c, "SELECT count(*) FROM jdbc_items WHERE id = 10"), 0L, "rolled back");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc_items (id, name, price, qty) VALUES (?, ?, ?, ?)")) {
                ps.setInt(1, 11);
                ps.setString(2, "nib");
                ps.setBigDecimal(3, new BigDecimal("0.75"));
                ps.setInt(4, 4);
                ps.executeUpdate();
            }
            c.commit();
            c.setAutoCommit(true);
            try (Connection other = connect()) {
                eq(count(other, "SELECT count(*) FROM jdbc_items WHERE id = 11"), 1L, "committed, seen by another session");
            }
            // A failed statement aborts the block; rollback recovers it.
            c.setAutoCommit(false);
            try {
                exec(c, "INSERT INTO jdbc_items VALUES (11, 'dup', 1, 1, NULL)");
                throw new AssertionError("duplicate key accepted");
            } catch (SQLException e) {
                eq(e.getSQLState(), "23505", "SQLSTATE of a duplicate key");
            }
            c.rollback();
            c.setAutoCommit(true);
            exec(c, "DELETE FROM jdbc_items WHERE id = 11");
        });

        CHECKS.put("materialized view is live", c -> {
            if (!c.getMetaData().getDatabaseProductVersion().contains("ripple")) {
                return; // PostgreSQL's materialized views change only on REFRESH
            }
            long before = count(c, "SELECT n FROM jdbc_mv");
            exec(c, "INSERT INTO jdbc_items VALUES (20, 'pad', 3.00, 5, NULL)");
            eq(count(c, "SELECT n FROM jdbc_mv"), before + 1, "count after INSERT, without REFRESH");
            exec(c, "DELETE FROM jdbc_items WHERE id = 20");
            eq(count(c, "SELECT n FROM jdbc_mv"), before, "count after DELETE");
        });

        CHECKS.put("fetch size (portal read in batches)", c -> {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(7);
                try (ResultSet rs = s.executeQuery("SELECT g, g * 2 AS d FROM generate_series(1, 100) AS g ORDER BY g")) {
                    long sum = 0;
                    int n = 0;
                    while (rs.next()) {
                        n++;
                        sum += rs.getLong(2);
                    }
                    eq(n, 100, "rows read in batches");
                    eq(sum, 10100L, "sum of the rows");
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT k, v FROM jdbc_batch WHERE k >= ? ORDER BY k")) {
                ps.setFetchSize(4);
                ps.setInt(1, 10);
                try (ResultSet rs = ps.executeQuery()) {
                    int n = 0;
                    int last = -1;
                    while (rs.next()) {
                        check(rs.getInt(1) > last, "ordered");
                        last = rs.getInt(1);
                        n++;
                    }
                    eq(n, 40, "rows of the prepared query read in batches");
                }
            }
            c.commit();
            c.setAutoCommit(true);
        });

        CHECKS.put("errors", c -> {
            try {
                exec(c, "SELECT * FROM jdbc_nothing");
                throw new AssertionError("no error");
            } catch (SQLException e) {
                eq(e.getSQLState(), "42P01", "SQLSTATE of a missing table");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT 1 / ?")) {
                ps.setInt(1, 0);
                ps.executeQuery();
                throw new AssertionError("no error");
            } catch (SQLException e) {
                eq(e.getSQLState(), "22012", "SQLSTATE of a division by zero");
            }
            eq(count(c, "SELECT 1"), 1L, "the connection still works");
        });
    }

    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        String port;
        if (args.length == 1) {
            port = args[0];
        } else if (args.length == 2) {
            host = args[0];
            port = args[1];
        } else {
            System.err.println("usage: java -cp postgresql.jar JdbcCheck.java [HOST] PORT");
            System.exit(2);
            return;
        }
        url = "jdbc:postgresql://" + host + ":" + port + "/ripple";
        try (Connection c = connect()) {
            for (String sql : SETUP) {
                exec(c, sql);
            }
        }
        String only = System.getenv("CHECK_ONLY");
        int failed = 0;
        for (Map.Entry<String, Check> e : CHECKS.entrySet()) {
            if (only != null && !e.getKey().contains(only)) {
                continue;
            }
            long start = System.nanoTime();
            try (Connection c = connect()) {
                e.getValue().run(c);
                System.out.println("ok   " + e.getKey() + " (" + (System.nanoTime() - start) / 1_000_000 + " ms)");
            } catch (Throwable t) {
                failed++;
                System.out.println("FAIL " + e.getKey() + ": " + t);
                if (!(t instanceof AssertionError)) {
                    t.printStackTrace(System.out);
                }
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
