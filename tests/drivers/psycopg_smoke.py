"""psycopg (Python's PostgreSQL driver) against a running ripple.

Usage: python3 psycopg_smoke.py PORT. Exits non-zero on any mismatch.
"""
import datetime
import decimal
import sys

import psycopg

port = sys.argv[1]
with psycopg.connect(f"host=127.0.0.1 port={port} user=ripple dbname=ripple") as conn:
    cur = conn.cursor()
    cur.execute("CREATE TABLE p (id integer NOT NULL, name text, amt numeric(10,2), d date)")
    cur.execute("INSERT INTO p VALUES (%s, %s, %s, %s)", (1, "a", decimal.Decimal("1.25"), datetime.date(2024, 1, 2)))
    # executemany prepares the statement server-side.
    cur.executemany(
        "INSERT INTO p VALUES (%s, %s, %s, %s)",
        [(2, "b", decimal.Decimal("2.5"), None), (3, None, None, None)],
    )
    conn.commit()
    cur.execute("CREATE MATERIALIZED VIEW pm AS SELECT count(*) AS n, sum(amt) AS s FROM p")
    conn.commit()
    try:
        cur.execute("SELECT 1/0")
        raise SystemExit("expected division by zero")
    except psycopg.errors.DivisionByZero as e:
        assert e.sqlstate == "22012", e.sqlstate
    conn.rollback()  # psycopg sends DEALLOCATE ALL here
    cur.execute("SELECT name FROM p WHERE id = %s", (1,))
    assert cur.fetchone() == ("a",)
    cur = conn.cursor(binary=True)
    cur.execute("SELECT id, amt, d, name FROM p WHERE id = %s", (1,))
    got = cur.fetchone()
    assert got == (1, decimal.Decimal("1.25"), datetime.date(2024, 1, 2), "a"), got
    cur.execute("INSERT INTO p VALUES (%s, %s, %s, %s)", (4, "d", decimal.Decimal("10"), None))
    conn.commit()
    cur.execute("SELECT n, s FROM pm")
    got = cur.fetchall()
    assert got == [(4, decimal.Decimal("13.75"))], got
    # A change of a reported setting reaches the client (ParameterStatus),
    # by SET and by set_config alike.
    conn.commit()
    conn.autocommit = True
    assert conn.info.parameter_status("application_name") == "", conn.info.parameter_status("application_name")
    cur.execute("SET application_name = 'smoke'")
    assert conn.info.parameter_status("application_name") == "smoke"
    cur.execute("SELECT set_config('application_name', 'smoke2', false)")
    assert conn.info.parameter_status("application_name") == "smoke2"
    cur.execute("RESET ALL")
    assert conn.info.parameter_status("application_name") == ""
print("psycopg smoke test passed")
