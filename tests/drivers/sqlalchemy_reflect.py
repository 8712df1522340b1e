"""SQLAlchemy 2 with psycopg 3 against ripple: connect, reflect tables,
views, materialized views, columns, primary and foreign keys with
`inspect()`, and an ORM round trip (with nested transactions, which use
SAVEPOINT) read back through a maintained materialized view. Exits
non-zero with a message on the first mismatch."""

import sys

import sqlalchemy as sa
from sqlalchemy import inspect, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

port = sys.argv[1]
engine = sa.create_engine(f"postgresql+psycopg://ripple@127.0.0.1:{port}/ripple")


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "items"
    # The server default is read back with INSERT ... RETURNING.
    __mapper_args__ = {"eager_defaults": True}
    # ripple has no sequences yet, so no SERIAL column.
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(sa.String(20), unique=True)
    price: Mapped[float] = mapped_column(sa.Numeric(10, 2), nullable=True)
    stock: Mapped[int] = mapped_column(server_default=sa.text("0"))


Base.metadata.create_all(engine)
with engine.begin() as c:
    c.execute(text("CREATE INDEX items_price_idx ON items (price)"))
    c.execute(text("CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10"))
    c.execute(text("CREATE MATERIALIZED VIEW item_count AS SELECT count(*) AS n FROM items"))

insp = inspect(engine)
check("tables", insp.get_table_names(), ["items"])
check("views", insp.get_view_names(), ["cheap"])
check("materialized views", insp.get_materialized_view_names(), ["item_count"])
cols = insp.get_columns("items")
check("column names", [c["name"] for c in cols], ["id", "name", "price", "stock"])
check("server default", [c["default"] for c in cols], [None, None, None, "0"])
check("name type", str(cols[1]["type"]), "VARCHAR(20)")
check("price type", str(cols[2]["type"]), "NUMERIC(10, 2)")
check("nullable", [c["nullable"] for c in cols], [False, False, True, False])
check("primary key", insp.get_pk_constraint("items")["constrained_columns"], ["id"])
# get_indexes() and get_unique_constraints() read pg_index.indkey as an
# int2vector ("1 2"); ripple's is an int2[] until it has that type.
check("foreign keys", insp.get_foreign_keys("items"), [])
check("view columns", [c["name"] for c in insp.get_columns("cheap")], ["id", "name"])

# Nested transactions use SAVEPOINT.
with Session(engine) as s:
    s.add(Item(id=1, name="pen", price=2.5))
    with s.begin_nested():
        s.add(Item(id=2, name="ink", price=1))
    try:
        with s.begin_nested():
            s.add(Item(id=3, name="pen", price=3))
            s.flush()
        sys.exit("duplicate name was accepted")
    except sa.exc.IntegrityError:
        pass
    s.commit()

with Session(engine) as s:
    names = [i.name for i in s.scalars(sa.select(Item).order_by(Item.id))]
    check("ORM rows", names, ["pen", "ink"])
    check("server default filled", [i.stock for i in s.scalars(sa.select(Item).order_by(Item.id))], [0, 0])

# A migration adds a column to a table a view and a materialized view read.
with engine.begin() as c:
    c.execute(text("ALTER TABLE items ADD COLUMN color text DEFAULT 'red'"))
insp = inspect(engine)
check("added column", [c["name"] for c in insp.get_columns("items")], ["id", "name", "price", "stock", "color"])
with engine.connect() as c:
    check("added column filled", c.execute(text("SELECT string_agg(color, ',') FROM items")).scalar(), "red,red")
    check("materialized view", c.execute(text("SELECT n FROM item_count")).scalar(), 2)
    check("version", c.execute(text("SELECT version()")).scalar().startswith("PostgreSQL 15"), True)
print("ok")
