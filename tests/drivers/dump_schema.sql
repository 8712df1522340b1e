-- The schema that round-trips through pg_dump --schema-only:
-- dump it from ripple, load the dump into a fresh ripple with psql, dump
-- again, and the two dumps are the same (tests/psql.rs,
-- pg_dump_schema_round_trips).

CREATE TABLE customers (
    id integer NOT NULL PRIMARY KEY,
    email varchar(120) NOT NULL UNIQUE,
    name text,
    signed_up date,
    active boolean NOT NULL DEFAULT true
);

CREATE TABLE orders (
    id bigint NOT NULL PRIMARY KEY,
    customer_id integer NOT NULL,
    amount numeric(12,2) NOT NULL,
    placed_at timestamp DEFAULT now(),
    note varchar(200) DEFAULT 'none'
);

CREATE TABLE products (
    sku varchar(32) NOT NULL,
    title text NOT NULL,
    price numeric(10,2),
    CONSTRAINT products_pkey PRIMARY KEY (sku),
    CONSTRAINT products_title_key UNIQUE (title)
);

CREATE INDEX orders_customer_idx ON orders (customer_id);

CREATE VIEW active_customers AS
    SELECT id, email, name FROM customers WHERE active;

CREATE MATERIALIZED VIEW customer_totals AS
    SELECT c.id, c.email, count(*) AS n_orders, sum(o.amount) AS total
    FROM customers c JOIN orders o ON o.customer_id = c.id
    GROUP BY c.id, c.email;

CREATE MATERIALIZED VIEW big_orders AS
    SELECT id, customer_id, amount FROM orders WHERE amount > 1000;

CREATE INDEX customer_totals_total_idx ON customer_totals (total);

COMMENT ON TABLE customers IS 'people who buy';
COMMENT ON COLUMN customers.email IS 'unique login';
COMMENT ON TABLE orders IS 'one row per order';
COMMENT ON VIEW active_customers IS 'customers with active = true';
COMMENT ON MATERIALIZED VIEW customer_totals IS 'orders per customer';

-- A schema of its own, with a table, an index and a view that reads
-- across schemas.
CREATE SCHEMA reporting;
COMMENT ON SCHEMA reporting IS 'derived data';

CREATE TABLE reporting.daily (
    day date NOT NULL PRIMARY KEY,
    orders integer NOT NULL
);

CREATE INDEX daily_orders_idx ON reporting.daily (orders);

CREATE VIEW reporting.big_days AS
    SELECT d.day, d.orders FROM reporting.daily d JOIN orders o ON o.placed_at::date = d.day WHERE d.orders > 100;
