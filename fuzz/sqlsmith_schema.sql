-- The schema sqlsmith queries (fuzz/sqlsmith.sh and tests/sqlsmith.rs):
-- tables of most of ripple's types with keys, NULLs and a few hundred rows,
-- a view, materialized views (maintained dataflows, so sqlsmith's
-- INSERT/UPDATE/DELETE inside its rolled-back transactions reach them) and
-- indexes. sqlsmith discovers it through pg_class/pg_attribute and
-- information_schema.tables at start.

CREATE TABLE nums (
    id integer PRIMARY KEY,
    s smallint,
    b bigint,
    n numeric(12, 3),
    r real,
    d double precision,
    flag boolean
);

CREATE TABLE words (
    id bigint PRIMARY KEY,
    name text NOT NULL,
    code varchar(8),
    tag char(3),
    raw bytea,
    doc jsonb,
    uid uuid,
    UNIQUE (code)
);

CREATE TABLE events (
    id integer PRIMARY KEY,
    num_id integer,
    day date,
    at timestamp,
    at_tz timestamptz,
    span interval,
    ints integer[],
    labels text[]
);

INSERT INTO nums
SELECT i,
       (i % 7)::smallint,
       i * 1000003::bigint,
       (i * 1.25)::numeric(12, 3),
       (i / 3.0)::real,
       i * 0.5,
       i % 3 = 0
FROM generate_series(1, 200) AS g(i);
INSERT INTO nums VALUES (0, NULL, NULL, NULL, NULL, NULL, NULL);

INSERT INTO words
SELECT i,
       'word' || i,
       'c' || (i % 1000),
       chr(65 + i % 26) || 'x',
       decode(lpad(i::text, 4, '0'), 'hex'),
       ('{"k": ' || i || ', "tags": ["a", "b"], "odd": ' || (i % 2 = 1) || '}')::jsonb,
       ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid
FROM generate_series(1, 150) AS g(i);
INSERT INTO words VALUES (0, '', NULL, NULL, NULL, NULL, NULL);

INSERT INTO events
SELECT i,
       i % 50,
       DATE '2024-01-01' + i,
       TIMESTAMP '2024-01-01 00:00:00' + i * INTERVAL '37 minutes',
       TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 hour',
       i * INTERVAL '1 minute',
       ARRAY[i, i + 1, i * 2],
       ARRAY['l' || (i % 4), 'm']
FROM generate_series(1, 300) AS g(i);
INSERT INTO events VALUES (0, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

CREATE INDEX events_num_id ON events (num_id);
CREATE INDEX words_name ON words (name);

CREATE VIEW num_words AS
SELECT n.id, n.n, n.flag, w.name, w.doc
FROM nums n LEFT JOIN words w ON w.id = n.id;

CREATE MATERIALIZED VIEW events_per_num AS
SELECT num_id, count(*) AS n, min(day) AS first_day, max(at) AS last_at, max(span) AS longest
FROM events
GROUP BY num_id;

CREATE MATERIALIZED VIEW flagged AS
SELECT n.id, n.d, e.day, e.labels
FROM nums n JOIN events e ON e.num_id = n.id
WHERE n.flag;
