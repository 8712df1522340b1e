"""asyncpg (Python's asyncio PostgreSQL driver) against a running server.

Usage: python3 asyncpg_check.py [HOST] PORT   (HOST defaults to 127.0.0.1;
user and database are `ripple`, no password).

asyncpg speaks only the extended protocol with named prepared statements,
asks for binary results for every type it knows, loads rows with binary
COPY, and sends a type-introspection query over pg_type the first time a
statement uses a type it has no built-in codec for (arrays, for one).

Each check runs on its own connection and prints `ok` or `FAIL`; the script
keeps going after a failure and exits 1 if any check failed. It is correct
against PostgreSQL 15 (where a materialized view changes only after REFRESH;
on ripple it must change without one). Objects it creates are dropped first,
so it can be re-run against the same database.

Part of `cargo test` (`asyncpg_works` in tests/drivers.rs, which starts a
server and runs this script; `pip install asyncpg`). `CHECK_ONLY=<part of a
check's name>` runs only the matching checks.
"""
import asyncio
import datetime
import decimal
import io
import json
import os
import sys
import traceback
import uuid

import asyncpg

if len(sys.argv) == 2:
    HOST, PORT = "127.0.0.1", int(sys.argv[1])
elif len(sys.argv) == 3:
    HOST, PORT = sys.argv[1], int(sys.argv[2])
else:
    raise SystemExit("usage: asyncpg_check.py [HOST] PORT")

N = 3000  # rows loaded with binary COPY
D = decimal.Decimal


def connect():
    return asyncpg.connect(host=HOST, port=PORT, user="ripple", database="ripple", timeout=30)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


# ---------------------------------------------------------------- test data

COLS = ["id", "big", "name", "amount", "num", "ratio", "flag", "created", "day", "doc"]
CREATE_ITEMS = """CREATE TABLE {name} (
    id integer NOT NULL PRIMARY KEY,
    big bigint,
    name text,
    amount numeric(12,3),
    num numeric,
    ratio double precision,
    flag boolean,
    created timestamp,
    day date,
    doc jsonb
)"""
TEXTS = ["plain", "", "it's \"quoted\"", "tab\there", "new\nline", "back\\slash", "ünïcødé ✓ 日本", "NULL", "\\N", "a,b;c"]
FLOATS = [0.0, -1.5, 1e300, -2.2250738585072014e-308, 3.141592653589793, float("inf"), float("-inf"), 1 / 3]
NUMS = [D("0"), D("-0.000001"), D("12345678901234567890.123456789"), D("1e20"), D("-42"), D("3.14159265358979323846264338327950288")]


def make_row(i):
    """Row i of `items`: every 7th row has NULLs in all nullable columns."""
    if i % 7 == 3:
        return (i, None, None, None, None, None, None, None, None, None)
    big = (i * 7919 - 1_000_000) * 1_000_003 * (1 if i % 2 else -1)
    name = f"{TEXTS[i % len(TEXTS)]}-{i}"
    amount = D(i * 137 % 1_000_000) / D(1000) * (1 if i % 3 else -1)  # scale <= 3
    num = NUMS[i % len(NUMS)] + i
    ratio = FLOATS[i % len(FLOATS)] if i % 11 else i / 7
    flag = i % 2 == 0
    created = datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999) + datetime.timedelta(seconds=i * 86_413, microseconds=i * 37)
    day = datetime.date(1899, 12, 30) + datetime.timedelta(days=i * 17)
    doc = json.dumps({"i": i, "tags": ["t", i % 3, None, True], "nested": {"even": i % 2 == 0, "s": name}, "f": 1.5})
    return (i, big, name, amount, num, ratio, flag, created, day, doc)


ROWS = [make_row(i) for i in range(1, N + 1)]


def normalize(row):
    """Compares jsonb by value (jsonb reorders keys and spacing)."""
    row = tuple(row)
    return row[:9] + ((json.loads(row[9]) if row[9] is not None else None),)


async def create_items(conn, name="items"):
    if name == "items":
        await conn.execute("DROP MATERIALIZED VIEW IF EXISTS items_by_flag")
    await conn.execute(f"DROP TABLE IF EXISTS {name}")
    await conn.execute(CREATE_ITEMS.format(name=name))


async def ensure_loaded(conn):
    """Loads ROWS into `items` if the COPY check did not (so later checks
    still test what they are meant to)."""
    n = await conn.fetchval("SELECT count(*) FROM items")
    if n != N:
        await create_items(conn)
        await conn.executemany(
            f"INSERT INTO items VALUES ({', '.join(f'${k}' for k in range(1, len(COLS) + 1))})", ROWS
        )


# ---------------------------------------------------------------- checks


async def check_connect():
    conn = await connect()
    try:
        eq(await conn.fetchval("SELECT 1"), 1, "SELECT 1")
        v = await conn.fetchval("SELECT version()")
        expect(v.startswith("PostgreSQL"), f"version() = {v!r}")
        expect(conn.get_server_version().major >= 12, f"server_version {conn.get_server_version()}")
        eq(await conn.fetchval("SELECT current_database()"), "ripple", "current_database()")
        # simple query protocol, several statements in one string
        await conn.execute("SELECT 1; SELECT 2")
    finally:
        await conn.close()


async def check_copy_records_binary():
    """copy_records_to_table: `SELECT cols FROM t LIMIT 1` to learn the
    column types, then `COPY "t"(cols) FROM STDIN (FORMAT binary)`."""
    conn = await connect()
    try:
        await create_items(conn)
        status = await conn.copy_records_to_table("items", records=ROWS, columns=COLS)
        eq(status, f"COPY {N}", "copy_records_to_table status")
        eq(await conn.fetchval("SELECT count(*) FROM items"), N, "count(*) after COPY")
        # a column subset, and an async iterable source
        await create_items(conn, "items_sub")

        async def gen():
            for r in ROWS[:100]:
                yield (r[0], r[2], r[3])

        status = await conn.copy_records_to_table("items_sub", records=gen(), columns=["id", "name", "amount"])
        eq(status, "COPY 100", "copy_records_to_table (async iterable, column subset)")
        got = [tuple(r) for r in await conn.fetch("SELECT id, name, amount, big FROM items_sub ORDER BY id")]
        eq(got, [(r[0], r[2], r[3], None) for r in ROWS[:100]], "items_sub rows")
    finally:
        await conn.close()


async def check_fetch_readback():
    conn = await connect()
    try:
        await ensure_loaded(conn)
        rows = await conn.fetch("SELECT * FROM items ORDER BY id")
        eq(len(rows), N, "row count")
        eq(list(rows[0].keys()), COLS, "column names")
        for got, want in zip(rows, ROWS):
            if normalize(got) != normalize(want):
                raise AssertionError(f"row {want[0]}: got {tuple(got)!r}\n  want {want!r}")
        # aggregates computed by the server
        agg = await conn.fetchrow(
            "SELECT count(*) AS n, count(big) AS nb, sum(big) AS sb, sum(amount) AS sa, "
            "sum(CASE WHEN flag THEN 1 ELSE 0 END) AS nt, min(created) AS mc, max(day) AS md FROM items"
        )
        live = [r for r in ROWS if r[1] is not None]
        eq(agg["n"], N, "count(*)")
        eq(agg["nb"], len(live), "count(big)")
        eq(agg["sb"], sum(r[1] for r in live), "sum(bigint)")
        eq(agg["sa"], sum(r[3] for r in live), "sum(numeric)")
        eq(agg["nt"], sum(1 for r in live if r[6]), "count of true flags")
        eq(agg["mc"], min(r[7] for r in live), "min(timestamp)")
        eq(agg["md"], max(r[8] for r in live), "max(date)")
        # jsonb operators on the binary-loaded documents
        got = await conn.fetchval("SELECT doc->'nested'->>'s' FROM items WHERE id = 5")
        eq(got, ROWS[4][2], "doc->'nested'->>'s'")
    finally:
        await conn.close()


async def check_prepared_params():
    """Named prepared statements, parameters of every type, reused."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        by_id = await conn.prepare("SELECT * FROM items WHERE id = $1")
        for i in (1, 2, 3, 4, 777, N):
            eq(normalize(await by_id.fetchrow(i)), normalize(ROWS[i - 1]), f"row by id {i}")
        eq(await by_id.fetchrow(N + 1), None, "missing id")
        live = [r for r in ROWS if r[1] is not None]
        r = ROWS[99]
        eq(await conn.fetchval("SELECT id FROM items WHERE big = $1", r[1]), r[0], "bigint param")
        eq(await conn.fetchval("SELECT id FROM items WHERE name = $1", r[2]), r[0], "text param")
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE amount = $1", r[3]),
           sum(1 for x in live if x[3] == r[3]), "numeric param")
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE num > $1", D("1000.5")),
           sum(1 for x in live if x[4] > D("1000.5")), "numeric param (unconstrained)")
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE ratio = $1", r[5]),
           sum(1 for x in live if x[5] == r[5]), "float8 param")
        t0, d0 = datetime.datetime(1990, 1, 1), datetime.date(1950, 6, 1)
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE flag = $1 AND created < $2 AND day >= $3", True, t0, d0),
           sum(1 for x in live if x[6] and x[7] < t0 and x[8] >= d0), "bool/timestamp/date params")
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE doc @> $1::jsonb", json.dumps({"tags": [2]})),
           sum(1 for x in live if x[0] % 3 == 2), "jsonb param")
        eq(await conn.fetchval("SELECT $1::int IS NULL", None), True, "NULL param")
        eq(await conn.fetchval("SELECT $1::text || $2::text", "it's", " ✓"), "it's ✓", "text concat params")
        # executemany: a pipeline of Bind/Execute on one prepared statement
        await create_items(conn, "items_em")
        await conn.executemany(f"INSERT INTO items_em VALUES ({', '.join(f'${k}' for k in range(1, 11))})", ROWS[:200])
        got = [normalize(x) for x in await conn.fetch("SELECT * FROM items_em ORDER BY id")]
        eq(got, [normalize(x) for x in ROWS[:200]], "executemany rows")
        # a statement run many times goes through asyncpg's statement cache
        for i in range(1, 30):
            eq(await conn.fetchval("SELECT name FROM items WHERE id = $1", i), ROWS[i - 1][2], f"cached stmt id {i}")
    finally:
        await conn.close()


async def check_introspection():
    """Types of a custom query's parameters and columns, and asyncpg's
    pg_type introspection query, which it sends for types it has no
    built-in codec for (arrays), preceded by
    `SELECT current_setting('jit'), set_config('jit', 'off', false)`."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        stmt = await conn.prepare(
            "SELECT id, big * 2 AS big2, name || '!' AS shout, amount, ratio::float8 / 2 AS half, flag, "
            "created, day, doc, $1::bigint AS p, count(*) OVER () AS total FROM items WHERE id < $2 AND name <> $3"
        )
        params = [(t.name, t.kind, t.schema) for t in stmt.get_parameters()]
        eq(params, [("int8", "scalar", "pg_catalog"), ("int4", "scalar", "pg_catalog"), ("text", "scalar", "pg_catalog")], "parameters")
        attrs = [(a.name, a.type.name) for a in stmt.get_attributes()]
        eq(attrs, [("id", "int4"), ("big2", "int8"), ("shout", "text"), ("amount", "numeric"), ("half", "float8"),
                   ("flag", "bool"), ("created", "timestamp"), ("day", "date"), ("doc", "jsonb"), ("p", "int8"),
                   ("total", "int8")], "attributes")
        rows = await stmt.fetch(7, 4, "x")
        eq([(r["id"], r["p"]) for r in rows], [(1, 7), (2, 7)], "rows of the prepared query (id 3 has a NULL name)")
        # array types make asyncpg run its introspection query
        eq(await conn.fetchval("SELECT $1::int[]", [1, 2, None]), [1, 2, None], "int[] round trip")
        eq(await conn.fetchval("SELECT array_agg(name ORDER BY id) FROM items WHERE id <= 2"), [ROWS[0][2], ROWS[1][2]], "text[] result")
        stmt = await conn.prepare("SELECT $1::bigint[] AS a, ARRAY[1.5, 2]::numeric[] AS b")
        eq([(t.name, t.kind) for t in stmt.get_parameters()], [("int8[]", "array")], "array parameter type")
        eq([(a.name, a.type.name, a.type.kind) for a in stmt.get_attributes()],
           [("a", "int8[]", "array"), ("b", "numeric[]", "array")], "array attribute types")
    finally:
        await conn.close()


async def check_more_types():
    """Binary parameters and results of the other types ripple has."""
    conn = await connect()
    try:
        utc = datetime.timezone.utc
        for typ, val in [
            ("smallint", -12345), ("real", 1.5), ("varchar(5)", "héllo"), ("char(3)", "ab "),
            ("timestamptz", datetime.datetime(1960, 5, 6, 7, 8, 9, 123456, tzinfo=utc)),
            ("interval", datetime.timedelta(days=-3, seconds=3723, microseconds=5)),
            ("bytea", b"\x00\x01\xffab'\\"), ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
            ("text[]", ["a", None, "b,c"]), ("numeric[]", [D("1.5"), None]), ("bool[]", [True, False]),
        ]:
            eq(await conn.fetchval(f"SELECT $1::{typ}", val), val, f"{typ} round trip")
        got = await conn.fetchval("SELECT interval '1 year 2 months 3 days 04:05:06.7'")
        eq(got, datetime.timedelta(days=428, seconds=14706, microseconds=700000), "interval result")
    finally:
        await conn.close()


async def check_infinity():
    """asyncpg encodes date.min/date.max and datetime.min/datetime.max as
    -infinity/infinity, and decodes infinity back to them."""
    conn = await connect()
    try:
        eq(await conn.fetchval("SELECT $1::date", datetime.date.max), datetime.date.max, "date.max (infinity)")
        eq(await conn.fetchval("SELECT $1::date", datetime.date.min), datetime.date.min, "date.min (-infinity)")
        eq(await conn.fetchval("SELECT 'infinity'::timestamp"), datetime.datetime.max, "'infinity'::timestamp")
        eq(await conn.fetchval("SELECT $1::timestamp", datetime.datetime.min), datetime.datetime.min, "datetime.min")
    finally:
        await conn.close()


async def check_type_codec():
    """set_type_codec for jsonb (how most asyncpg users get dicts back)."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
        got = await conn.fetchval("SELECT doc FROM items WHERE id = 1")
        eq(got, json.loads(ROWS[0][9]), "jsonb decoded by custom codec")
        got = await conn.fetchval("SELECT $1::jsonb -> 'a'", {"a": [1, "x"]})
        eq(got, [1, "x"], "jsonb parameter encoded by custom codec")
    finally:
        await conn.close()


async def check_transactions():
    conn = await connect()
    try:
        await conn.execute("DROP TABLE IF EXISTS tx")
        await conn.execute("CREATE TABLE tx (id integer NOT NULL PRIMARY KEY, v text)")
        async with conn.transaction():  # BEGIN; ... COMMIT;
            await conn.execute("INSERT INTO tx VALUES ($1, $2)", 1, "a")
            eq(await conn.fetchval("SELECT count(*) FROM tx"), 1, "own write visible in transaction")
        eq(await conn.fetchval("SELECT v FROM tx WHERE id = 1"), "a", "committed row")
        try:
            async with conn.transaction():
                await conn.execute("INSERT INTO tx VALUES ($1, $2)", 2, "b")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        eq(await conn.fetchval("SELECT count(*) FROM tx"), 1, "rolled-back row gone")
        # a failed statement aborts the transaction; ROLLBACK recovers
        tr = conn.transaction()
        await tr.start()
        await conn.execute("INSERT INTO tx VALUES (3, 'c')")
        try:
            await conn.execute("INSERT INTO tx VALUES (1, 'dup')")
            raise AssertionError("duplicate key accepted")
        except asyncpg.UniqueViolationError:
            pass
        try:
            await conn.fetchval("SELECT 1")
            raise AssertionError("statement accepted in an aborted transaction")
        except asyncpg.InFailedSQLTransactionError:
            pass
        await tr.rollback()
        eq(await conn.fetchval("SELECT count(*) FROM tx"), 1, "after rollback of aborted transaction")
        # nested transaction: SAVEPOINT / ROLLBACK TO SAVEPOINT / RELEASE
        async with conn.transaction():
            await conn.execute("INSERT INTO tx VALUES (4, 'd')")
            try:
                async with conn.transaction():
                    await conn.execute("INSERT INTO tx VALUES (5, 'e')")
                    raise RuntimeError("inner")
            except RuntimeError:
                pass
            async with conn.transaction():
                await conn.execute("INSERT INTO tx VALUES (6, 'f')")
        eq([r[0] for r in await conn.fetch("SELECT id FROM tx ORDER BY id")], [1, 4, 6], "savepoints")
        # errors outside a transaction leave the connection usable
        try:
            await conn.fetchval("SELECT 1/0")
            raise AssertionError("1/0 succeeded")
        except asyncpg.DivisionByZeroError:
            pass
        eq(await conn.fetchval("SELECT 2"), 2, "after an error")
    finally:
        await conn.close()


async def check_transaction_options():
    """conn.transaction(isolation=..., readonly=...) sends
    `BEGIN ISOLATION LEVEL ...` / `BEGIN READ ONLY`."""
    conn = await connect()
    try:
        await conn.execute("DROP TABLE IF EXISTS txo")
        await conn.execute("CREATE TABLE txo (id integer NOT NULL)")
        async with conn.transaction(isolation="serializable"):
            await conn.execute("INSERT INTO txo VALUES (1)")
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            eq(await conn.fetchval("SELECT count(*) FROM txo"), 1, "read-only transaction")
        try:
            async with conn.transaction(readonly=True):
                await conn.execute("INSERT INTO txo VALUES (2)")
            raise AssertionError("write accepted in READ ONLY transaction")
        except asyncpg.ReadOnlySQLTransactionError:
            pass
        eq(await conn.fetchval("SELECT count(*) FROM txo"), 1, "after read-only transaction")
    finally:
        await conn.close()


async def check_quote_literal_and_copy_out():
    """copy_from_query with arguments: asyncpg inlines them by sending
    `SELECT quote_literal($1::"pg_catalog"."int4"::text)`, then
    `COPY (query) TO STDOUT (FORMAT 'csv')`; copy_from_table sends
    `COPY "t"("c") TO STDOUT (FORMAT 'csv', ...)`."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        eq(await conn.fetchval("SELECT quote_literal($1::text)", "it's"), "'it''s'", "quote_literal")
        buf = io.BytesIO()
        status = await conn.copy_from_query(
            "SELECT id, amount FROM items WHERE id < $1 AND name <> $2 ORDER BY id", 10, "x'y", output=buf, format="csv"
        )
        sel = [r for r in ROWS[:9] if r[2] is not None]
        eq(status, f"COPY {len(sel)}", "copy_from_query status")
        want = "".join(f"{r[0]},{format(r[3], '.3f')}\n" for r in sel)
        eq(buf.getvalue().decode(), want, "copy_from_query output")
        buf = io.BytesIO()
        status = await conn.copy_from_table("items", columns=["id", "name"], output=buf, format="csv", header=True)
        eq(status, f"COPY {N}", "copy_from_table status")
        lines = buf.getvalue().decode().splitlines()
        eq(lines[0], "id,name", "copy_from_table header")
    finally:
        await conn.close()


async def check_copy_in_text():
    """copy_to_table from a CSV file object:
    `COPY "t" FROM STDIN (FORMAT 'csv', NULL '')`."""
    conn = await connect()
    try:
        await conn.execute("DROP TABLE IF EXISTS csvin")
        await conn.execute("CREATE TABLE csvin (id integer NOT NULL, name text, amount numeric(12,3))")
        data = io.BytesIO(b'1,plain,1.5\n2,"it\'s, ""q""",\n3,,-0.001\n')
        status = await conn.copy_to_table("csvin", source=data, format="csv", null="")
        eq(status, "COPY 3", "copy_to_table status")
        got = [tuple(r) for r in await conn.fetch("SELECT * FROM csvin ORDER BY id")]
        eq(got, [(1, "plain", D("1.5")), (2, "it's, \"q\"", None), (3, None, D("-0.001"))], "copy_to_table rows")
    finally:
        await conn.close()


async def check_cursor():
    """conn.cursor(): Bind then Execute with a row limit (portal suspended)
    inside a transaction."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        async with conn.transaction():
            ids = [r["id"] async for r in conn.cursor("SELECT id FROM items WHERE id > $1 ORDER BY id", 0, prefetch=100)]
            eq(ids, list(range(1, N + 1)), "async for over a cursor")
            cur = await conn.cursor("SELECT id, name FROM items ORDER BY id")
            eq([r["id"] for r in await cur.fetch(5)], [1, 2, 3, 4, 5], "cursor.fetch(5)")
            eq((await cur.fetchrow())["id"], 6, "cursor.fetchrow()")
            eq([r["id"] for r in await cur.fetch(3)], [7, 8, 9], "cursor.fetch(3)")
        eq(await conn.fetchval("SELECT count(*) FROM items"), N, "query after cursor")
    finally:
        await conn.close()


async def check_cursor_forward():
    """cursor.forward(n) sends `MOVE FORWARD n "<portal>"` on the protocol
    portal."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        async with conn.transaction():
            cur = await conn.cursor("SELECT id FROM items ORDER BY id")
            eq(await cur.forward(10), 10, "cursor.forward(10)")
            eq((await cur.fetchrow())["id"], 11, "row after forward")
    finally:
        await conn.close()


async def check_pool():
    """A pool resets a released connection with
    `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;`."""
    pool = await asyncpg.create_pool(host=HOST, port=PORT, user="ripple", database="ripple", min_size=1, max_size=1)
    try:
        async with pool.acquire() as c:
            eq(await c.fetchval("SELECT 41 + $1::int", 1), 42, "query on pooled connection")
        async with pool.acquire() as c:  # the same connection, after reset
            eq(await c.fetchval("SELECT 43"), 43, "query after reset")
    finally:
        await pool.close()


async def check_materialized_view():
    """A materialized view over the table; its result must change after an
    insert (on PostgreSQL after REFRESH, on ripple without one)."""
    conn = await connect()
    try:
        await ensure_loaded(conn)
        ripple = "ripple" in await conn.fetchval("SELECT version()")
        await conn.execute("DROP MATERIALIZED VIEW IF EXISTS items_by_flag")
        await conn.execute(
            "CREATE MATERIALIZED VIEW items_by_flag AS "
            "SELECT flag, count(*) AS n, sum(amount) AS total, max(created) AS latest FROM items GROUP BY flag"
        )

        def expected(rows):
            out = {}
            for r in rows:
                n, tot, lat = out.get(r[6], (0, None, None))
                if r[3] is not None:
                    tot = r[3] if tot is None else tot + r[3]
                if r[7] is not None:
                    lat = r[7] if lat is None else max(lat, r[7])
                out[r[6]] = (n + 1, tot, lat)
            return out

        q = "SELECT flag, n, total, latest FROM items_by_flag"
        got = {r["flag"]: (r["n"], r["total"], r["latest"]) for r in await conn.fetch(q)}
        eq(got, expected(ROWS), "view before insert")
        new = [make_row(i) for i in range(N + 1, N + 51)]
        await conn.executemany(f"INSERT INTO items VALUES ({', '.join(f'${k}' for k in range(1, 11))})", new)
        if ripple:
            got = {r["flag"]: (r["n"], r["total"], r["latest"]) for r in await conn.fetch(q)}
            eq(got, expected(ROWS + new), "view after insert, without REFRESH")
        await conn.execute("REFRESH MATERIALIZED VIEW items_by_flag")
        got = {r["flag"]: (r["n"], r["total"], r["latest"]) for r in await conn.fetch(q)}
        eq(got, expected(ROWS + new), "view after insert and REFRESH")
        await conn.execute(f"DELETE FROM items WHERE id > {N}")
        await conn.execute("REFRESH MATERIALIZED VIEW items_by_flag")
        got = {r["flag"]: (r["n"], r["total"], r["latest"]) for r in await conn.fetch(q)}
        eq(got, expected(ROWS), "view after delete")
    finally:
        await conn.close()


CHECKS = [
    ("connect", check_connect),
    ("copy_records_to_table (binary COPY)", check_copy_records_binary),
    ("fetch all rows back", check_fetch_readback),
    ("prepared statements with parameters", check_prepared_params),
    ("introspection of a query's types", check_introspection),
    ("more types (binary)", check_more_types),
    ("date/timestamp infinity", check_infinity),
    ("set_type_codec(jsonb)", check_type_codec),
    ("transactions", check_transactions),
    ("transaction isolation / read only", check_transaction_options),
    ("quote_literal, COPY TO STDOUT", check_quote_literal_and_copy_out),
    ("copy_to_table (CSV COPY FROM STDIN)", check_copy_in_text),
    ("cursor (portal with row limit)", check_cursor),
    ("cursor.forward (MOVE on a portal)", check_cursor_forward),
    ("pool (connection reset query)", check_pool),
    ("materialized view changes after insert", check_materialized_view),
]


async def main():
    only = os.environ.get("CHECK_ONLY")  # run only the checks whose name contains this
    failed = []
    ran = 0
    for name, fn in CHECKS:
        if only and only not in name:
            continue
        ran += 1
        try:
            await asyncio.wait_for(fn(), 120)
            print(f"ok   {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure
            failed.append(name)
            detail = f"{type(e).__name__}: {e}"
            if not isinstance(e, AssertionError):
                detail += "\n" + "".join(traceback.format_exception(e)[-3:])
            print(f"FAIL {name}: {detail}", flush=True)
    if failed:
        print(f"\n{len(failed)} of {ran} asyncpg checks failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)
    print(f"all {ran} asyncpg checks passed")


asyncio.run(main())
