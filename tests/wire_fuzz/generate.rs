//! Case generators: start-ups, sessions of SQL, the extended protocol out
//! of order.

use super::*;

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Statements the fuzzing sessions send: cheap, and never touching `fuzz_t`
/// (the health check's), never changing roles or the statement timeout.
pub(crate) const SQL: &[&str] = &[
    "SELECT 1",
    "SELECT 1, 'a', NULL, 1.5::numeric, 2.5::float8, true, now() IS NOT NULL",
    "SELECT * FROM scratch ORDER BY i LIMIT 5",
    "SELECT count(*), sum(i), max(t) FROM scratch",
    "SELECT * FROM scratch_mv ORDER BY t",
    "SELECT * FROM fuzz_mv ORDER BY b",
    "SELECT t, count(*) FROM scratch GROUP BY t HAVING count(*) > 1",
    "SELECT a.i, b.k FROM scratch a LEFT JOIN scratch_k b ON a.i = b.k ORDER BY 1 LIMIT 10",
    "INSERT INTO scratch (i, t) VALUES (1, 'one'), (2, NULL), (3, 'three')",
    "INSERT INTO scratch VALUES (4, 4, 4.5, 4.25, 'four', '2024-01-02', '2024-01-02 03:04:05', true, '\\x0102', \
     'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', '{1,2,3}')",
    "INSERT INTO scratch_k VALUES (1, 'a')",
    "INSERT INTO scratch_k VALUES (2, 'b'), (2, 'c')",
    "UPDATE scratch SET t = t || 'x' WHERE i = 1",
    "UPDATE scratch_k SET v = 'z' WHERE k = 1",
    "DELETE FROM scratch WHERE i > 2",
    "DELETE FROM scratch_k WHERE k > 1",
    "TRUNCATE scratch",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "START TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "SAVEPOINT s1",
    "ROLLBACK TO SAVEPOINT s1",
    "RELEASE SAVEPOINT s1",
    "BEGIN; INSERT INTO scratch (i) VALUES (7); COMMIT",
    "BEGIN; INSERT INTO scratch (i) VALUES (8); SELECT 1/0; COMMIT",
    "SET idle_in_transaction_session_timeout = '200ms'",
    "SET application_name = 'wire_fuzz_2'",
    "SET search_path = public",
    "SET DateStyle = 'ISO, DMY'",
    "SHOW ALL",
    "SHOW server_version",
    "SHOW transaction_isolation",
    "BEGIN; DECLARE c1 CURSOR FOR SELECT * FROM scratch; FETCH 2 FROM c1; MOVE 1 IN c1; CLOSE c1; COMMIT",
    "DECLARE c2 CURSOR WITH HOLD FOR SELECT i FROM scratch",
    "FETCH 1 FROM c2",
    "CLOSE c2",
    "PREPARE p1 AS SELECT $1::int + 1",
    "EXECUTE p1(41)",
    "DEALLOCATE p1",
    "DEALLOCATE ALL",
    "COPY scratch TO STDOUT",
    "COPY (SELECT i, t FROM scratch) TO STDOUT (FORMAT csv, HEADER)",
    "COPY scratch TO STDOUT (FORMAT binary)",
    "SELECT generate_series(1, 50)",
    "SELECT * FROM generate_series(1, 3) g, unnest(ARRAY['a', 'b']) u",
    "SELECT '{\"a\": 1}'::jsonb -> 'a', '[1, 2]'::jsonb @> '[1]'",
    "SELECT ARRAY[1, 2, 3] @> ARRAY[2], (ARRAY[1, 2])[5]",
    "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '\\xdead'::bytea, interval '1 day 2 hours'",
    "SELECT 1/0",
    "SELECT 2147483647::int + 1",
    "SELECT 'abc'::int",
    "SELECT * FROM does_not_exist",
    "SELEC 1",
    "",
    ";",
    " ; ; ",
    "SELECT 1; SELECT 2",
    "SELECT 1; SELEC 2; SELECT 3",
    "CREATE TABLE IF NOT EXISTS scratch_tmp (i int, t text)",
    "DROP TABLE IF EXISTS scratch_tmp CASCADE",
    "CREATE MATERIALIZED VIEW scratch_tmp_mv AS SELECT t, count(*) AS n FROM scratch GROUP BY t",
    "DROP MATERIALIZED VIEW IF EXISTS scratch_tmp_mv",
    "CREATE INDEX IF NOT EXISTS scratch_i ON scratch (i)",
    "CHECKPOINT",
    "VACUUM",
    "ANALYZE",
    "LISTEN wire_fuzz",
    "NOTIFY wire_fuzz",
    "COMMENT ON TABLE scratch IS 'fuzzed'",
];

/// Statements with `$n` parameters, with the OIDs Parse declares.
pub(crate) const PARAM_SQL: &[(&str, &[u32])] = &[
    ("SELECT $1::int4", &[23]),
    ("SELECT $1", &[0]),
    ("SELECT $1", &[]),
    ("SELECT $1, $2", &[25, 0]),
    (
        "INSERT INTO scratch VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        &[23, 20, 1700, 701, 25, 1082, 1114, 16, 17, 2950, 3802, 1007],
    ),
    ("INSERT INTO scratch (i, t) VALUES ($1, $2)", &[23, 25]),
    ("SELECT * FROM scratch WHERE i = $1 OR t = $2", &[23, 25]),
    ("UPDATE scratch SET j = $1 WHERE i = $2", &[3802, 23]),
    ("DELETE FROM scratch WHERE d < $1", &[1082]),
    ("INSERT INTO scratch_k VALUES ($1, $2)", &[23, 1043]),
    ("SELECT $1::numeric * 2, $2::float8 / 3", &[1700, 701]),
    (
        "SELECT $1::timestamp + interval '1 day', $2::date",
        &[1114, 1082],
    ),
    ("SELECT $1::bytea, $2::uuid, $3::bool", &[17, 2950, 16]),
    (
        "SELECT array_length($1::int4[], 1), $2::text[]",
        &[1007, 1009],
    ),
    ("SELECT $1::int8[], $2::jsonb -> 'a'", &[1016, 3802]),
    (
        "SELECT $1::interval, $2::timestamptz, $3::int2, $4::float4, $5::varchar",
        &[1186, 1184, 21, 700, 1043],
    ),
    ("SELECT $1::json, $2::char(3)", &[114, 1042]),
    ("SELECT * FROM scratch ORDER BY i LIMIT $1", &[20]),
    ("SELECT i, t, j, arr FROM scratch", &[]),
    ("SELECT generate_series(1, 20)", &[]),
    ("COPY scratch (i, t) FROM STDIN", &[]),
    ("COPY scratch TO STDOUT (FORMAT binary)", &[]),
    ("BEGIN", &[]),
    ("COMMIT", &[]),
    ("SELECT 1/0", &[]),
    ("", &[]),
];

/// The scratch table's columns with their types' OIDs.
pub(crate) const SCRATCH_COLUMNS: &[(&str, u32)] = &[
    ("i", 23),
    ("b8", 20),
    ("n", 1700),
    ("f", 701),
    ("t", 25),
    ("d", 1082),
    ("ts", 1114),
    ("ok", 16),
    ("bin", 17),
    ("u", 2950),
    ("j", 3802),
    ("arr", 1007),
];

#[rustfmt::skip]
pub(crate) const OIDS: &[u32] = &[
    0, 16, 17, 20, 21, 23, 25, 114, 700, 701, 1007, 1009, 1016, 1042, 1043, 1082, 1114, 1184, 1186, 1700, 2950,
    3802, 705, 2249, 9999, 4_294_967_295,
];

/// Pieces of SQL for random statements (no RECURSIVE: a random recursive
/// query could legitimately run forever).
#[rustfmt::skip]
pub(crate) const TOKENS: &[&str] = &[
    "SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "LIMIT", "OFFSET", "HAVING", "JOIN", "LEFT JOIN",
    "FULL JOIN", "CROSS JOIN", "LATERAL", "ON", "USING", "UNION", "UNION ALL", "EXCEPT", "INTERSECT", "ALL",
    "DISTINCT", "DISTINCT ON", "AS", "AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "IN", "EXISTS", "BETWEEN",
    "LIKE", "ILIKE", "SIMILAR TO", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "::", "int", "bigint", "text",
    "numeric", "numeric(1000, 999)", "jsonb", "int[]", "date", "timestamp", "interval", "uuid", "bytea", "boolean",
    "(", ")", "[", "]", ",", ";", ".", "*", "+", "-", "/", "%", "^", "=", "<>", "<", ">=", "||", "->", "->>", "#>",
    "@>", "<@", "?", "&&", "$1", "$2", "$0", "$65536", "$-1", "0", "1", "-1", "2147483648", "9223372036854775808",
    "1e308", "1e-400", "1.5", "-0.0", "'NaN'", "'infinity'", "'a'", "''", "'{1,2}'", "'{{1},{2}}'",
    "'[1, {\"a\": null}]'", "E'\\x'", "E'\\u'", "U&'\\0000'", "i", "t", "j", "arr", "d", "ts", "n", "scratch",
    "scratch_mv", "scratch_k", "s", "x", "count(*)", "sum(", "avg(", "max(", "min(", "string_agg(", "array_agg(",
    "bool_and(", "stddev(", "generate_series(1, 3)", "unnest(", "ARRAY[", "ARRAY(", "ROW(", "jsonb_each(",
    "jsonb_array_elements(", "regexp_split_to_table(", "substring(", "length(", "upper(", "coalesce(", "nullif(",
    "greatest(", "abs(", "round(", "to_char(", "date_trunc(", "extract(", "now()", "INSERT INTO", "VALUES",
    "UPDATE", "SET", "DELETE", "RETURNING", "WITH", "OVER", "PARTITION BY", "FILTER", "WINDOW", "row_number()",
    "DESC", "NULLS FIRST", "COLLATE", "\"C\"", "interval '1 day'", "date '2020-01-01'", "FOR UPDATE", "ANY", "SOME",
    "EXPLAIN", "TABLE", "VIEW", "CREATE", "DROP", "INDEX", "BEGIN", "COMMIT", "ROLLBACK", "DEFAULT", "PRIMARY KEY",
    "UNIQUE", "\u{e9}", "\u{1f600}", "--", "/*", "*/", "\"", "'", "\\",
];

/// Invalid UTF-8 byte sequences.
pub(crate) const BAD_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\x80",
    b"\xe2\x82",
    b"\x80",
];

pub(crate) fn gen_case(rng: &mut Rng, origin: String, keys: &[(u32, Vec<u8>)]) -> Case {
    if rng.percent(20) {
        let case = gen_startup_case(rng, origin, keys);
        return mangle(rng, case);
    }
    // A third of the session cases are made only of well-formed messages
    // (statements from SQL): their closing query must be answered.
    if rng.percent(35) {
        return gen_session_case(rng, origin, true);
    }
    let case = gen_session_case(rng, origin, false);
    mangle(rng, case)
}

/// Mutations of random chunks, splices of two, and cuts.
pub(crate) fn mangle(rng: &mut Rng, mut case: Case) -> Case {
    if !case.chunks.is_empty() && rng.percent(25) {
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(case.chunks.len());
            mutate(rng, &mut case.chunks[i]);
        }
        case.strict = false;
    }
    if case.chunks.len() >= 2 && rng.percent(5) {
        let i = rng.below(case.chunks.len());
        let j = rng.below(case.chunks.len());
        let a = rng.below(case.chunks[i].len() + 1);
        let b = rng.below(case.chunks[j].len() + 1);
        let mut spliced = case.chunks[i][..a].to_vec();
        spliced.extend_from_slice(&case.chunks[j][b..]);
        case.chunks[i] = spliced;
        case.strict = false;
    }
    if !case.chunks.is_empty() && rng.percent(8) {
        let keep = 1 + rng.below(case.chunks.len());
        case.chunks.truncate(keep);
        let last = case.chunks[keep - 1].len();
        case.cut = Some(rng.below(last.max(1)));
        case.reset = rng.percent(50);
        case.strict = false;
    }
    case
}

/// More start-up parameters for a valid start-up: odd, wrong or garbage.
pub(crate) const EXTRA_STARTUP_PARAMETERS: &[&[(&[u8], &[u8])]] = &[
    &[
        (b"application_name", b"fuzz\xff"),
        (b"client_encoding", b"UTF8"),
    ],
    &[(b"options", b"-c statement_timeout=1s --DateStyle=ISO")],
    &[(b"options", b"-c")],
    &[(b"options", b"-c nosuch=1 -c search_path=\xff")],
    &[(b"DateStyle", b"garbage"), (b"TimeZone", b"Mars/Olympus")],
    &[(b"_pq_.unknown", b"1"), (b"replication", b"database")],
    &[(b"client_encoding", b"LATIN1")],
    &[(b"", b"")],
];

pub(crate) fn gen_startup_case(rng: &mut Rng, origin: String, keys: &[(u32, Vec<u8>)]) -> Case {
    let mut case = Case::new(origin, false);
    case.strict = false;
    let valid = startup_message(
        PROTOCOL_3_0,
        &[(b"user", b"ripple"), (b"database", b"ripple")],
    );
    match rng.below(13) {
        0 => {
            // Valid, with extra parameters (some garbage).
            let extra = rng.pick(EXTRA_STARTUP_PARAMETERS);
            let mut params: Vec<(&[u8], &[u8])> =
                vec![(b"user", b"ripple"), (b"database", b"ripple")];
            params.extend_from_slice(extra);
            case.chunks.push(startup_message(PROTOCOL_3_0, &params));
        }
        1 => {
            // Wrong or unusual protocol versions.
            let version = if rng.percent(80) {
                rng.pick(&[
                    0,
                    0x0001_0000,
                    0x0002_0000,
                    0x0003_0001,
                    0x0003_0002,
                    0x0003_270f,
                    0x0004_0000,
                    0xffff_ffff,
                ])
            } else {
                rng.next_u64() as u32
            };
            case.chunks.push(startup_message(
                version,
                &[(b"user", b"ripple"), (b"database", b"ripple")],
            ));
        }
        2 => {
            // Missing NUL terminators (length adjusted or not).
            let mut m = valid.clone();
            let k = 1 + rng.below(4);
            m.truncate(m.len() - k);
            if rng.percent(50) {
                let len = m.len() as u32;
                m[..4].copy_from_slice(&len.to_be_bytes());
            }
            case.chunks.push(m);
        }
        3 => {
            // Lengths: huge, negative, short, off by some.
            let mut m = valid.clone();
            let actual = m.len() as i64;
            let len: i64 = rng.pick(&[
                0,
                1,
                4,
                7,
                8,
                9,
                -1,
                i32::MIN as i64,
                i32::MAX as i64,
                10_000,
                10_001,
                actual + 1,
                actual + 100,
                actual - 1,
                actual - 10,
            ]);
            m[..4].copy_from_slice(&(len as i32).to_be_bytes());
            case.chunks.push(m);
        }
        4 | 5 => {
            // SSLRequest / GSSENCRequest, then something.
            let first = if rng.percent(50) {
                SSL_REQUEST_CODE
            } else {
                GSSENC_REQUEST_CODE
            };
            case.chunks.push(code_packet(first));
            match rng.below(6) {
                0 | 1 => case.chunks.push(valid.clone()),
                2 => case.chunks.push(code_packet(if first == SSL_REQUEST_CODE {
                    GSSENC_REQUEST_CODE
                } else {
                    SSL_REQUEST_CODE
                })),
                3 => case.chunks.push(code_packet(first)),
                4 => case.chunks.push(rng.some_bytes()),
                _ => {
                    let mut m = valid.clone();
                    mutate(rng, &mut m);
                    case.chunks.push(m);
                }
            }
            if rng.percent(50) {
                case.chunks.push(valid.clone());
            }
        }
        6 => {
            // CancelRequest: random keys, another session's key, odd lengths.
            let (pid, key) = if keys.is_empty() || rng.percent(50) {
                let n = rng.pick(&[4, 4, 0, 1, 32, 256, 300]);
                (rng.next_u64() as u32, rng.bytes(n))
            } else {
                keys[rng.below(keys.len())].clone()
            };
            let mut m = cancel_request(pid, &key);
            if rng.percent(20) {
                let len = rng.pick(&[0u32, 8, 11, 12, 15, 0xffff_ffff, 10_001]);
                m[..4].copy_from_slice(&len.to_be_bytes());
            }
            case.chunks.push(m);
        }
        7 => {
            // Random parameters: garbage users, databases, options, non-UTF-8.
            let mut params: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let most = if rng.one_in(10) { 300 } else { 6 };
            for _ in 0..rng.below(most) {
                let key: Vec<u8> = match rng.below(6) {
                    0 => b"user".to_vec(),
                    1 => b"database".to_vec(),
                    2 => b"options".to_vec(),
                    3 => random_text(rng),
                    _ => rng
                        .pick(&[
                            &b"application_name"[..],
                            b"client_encoding",
                            b"DateStyle",
                            b"_pq_.x",
                        ])
                        .to_vec(),
                };
                let value = match rng.below(4) {
                    0 => b"ripple".to_vec(),
                    _ => random_text(rng),
                };
                params.push((key, value));
            }
            let refs: Vec<(&[u8], &[u8])> = params.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            case.chunks.push(startup_message(PROTOCOL_3_0, &refs));
        }
        8 => case.chunks.push(rng.some_bytes()),
        9 => {
            let mut m = valid.clone();
            mutate(rng, &mut m);
            case.chunks.push(m);
        }
        10 => {
            // Direct TLS: a ClientHello's first bytes.
            let mut m = vec![0x16, 0x03, 0x01];
            m.extend(rng.some_bytes());
            case.chunks.push(m);
        }
        11 => {
            // A typed frontend message before any start-up.
            case.chunks.push(query(b"SELECT 1"));
        }
        _ => {
            // Shorter than a start-up header.
            let n = rng.below(8);
            let mut m = valid.clone();
            m.truncate(n);
            case.chunks.push(m);
        }
    }
    if rng.percent(40) {
        case.chunks.push(query(b"SELECT 1"));
    }
    if rng.percent(20) {
        case.chunks.push(terminate());
    }
    case
}

/// Printable or not, UTF-8 or not, short or long.
pub(crate) fn random_text(rng: &mut Rng) -> Vec<u8> {
    match rng.below(5) {
        0 => {
            let mut v = rng.some_bytes();
            v.retain(|&b| b != 0);
            v
        }
        1 => {
            let mut v = b"ri".to_vec();
            v.extend_from_slice(rng.pick(BAD_UTF8));
            v
        }
        2 => "x".repeat(rng.len() * 10).into_bytes(),
        3 => rng.pick(TOKENS).as_bytes().to_vec(),
        _ => Vec::new(),
    }
}

/// Messages after a valid start-up; only well-formed ones if `clean`.
pub(crate) fn gen_session_case(rng: &mut Rng, origin: String, clean: bool) -> Case {
    let mut case = Case::new(origin, true);
    let most = if rng.one_in(4) { 24 } else { 6 };
    let n = 1 + rng.below(most);
    for _ in 0..n {
        let pick = if clean { rng.below(76) } else { rng.below(100) };
        match pick {
            0..=29 => {
                let (sql, ok) = if clean {
                    (rng.pick(SQL).as_bytes().to_vec(), true)
                } else {
                    gen_sql(rng)
                };
                case.add(query(&sql), ok);
            }
            30..=59 => gen_extended(rng, &mut case, clean),
            60..=71 => gen_copy_in(rng, &mut case),
            72..=75 => gen_copy_outside(rng, &mut case),
            76..=77 if !clean => {
                let nargs = rng.below(4);
                let formats: Vec<i16> = (0..rng.below(3))
                    .map(|_| rng.pick(&[0, 1, 2, -1]))
                    .collect();
                let args: Vec<Option<Vec<u8>>> =
                    (0..nargs).map(|_| Some(rng.some_bytes())).collect();
                let oid = rng.pick(&[0, 1, 1242, 2249, u32::MAX]);
                // Not supported: pgwire closes the connection (no error).
                case.bad(function_call(oid, &formats, &args, rng.pick(&[0, 1, 7])));
            }
            78..=79 => {
                // PasswordMessage after authentication.
                let len = rng.len();
                case.ok(message(b'p', &rng.bytes(len)));
            }
            80..=83 => gen_unknown(rng, &mut case),
            84..=89 => gen_bad_length(rng, &mut case),
            90..=91 => {
                case.ok(terminate());
                break;
            }
            _ => {
                let len = rng.len();
                case.bad(rng.bytes(len));
            }
        }
    }
    if rng.percent(3) {
        case.closing = false;
    }
    case
}

/// A statement, and whether it is one of the corpus's (well-formed).
pub(crate) fn gen_sql(rng: &mut Rng) -> (Vec<u8>, bool) {
    match rng.below(100) {
        0..=59 => (rng.pick(SQL).as_bytes().to_vec(), true),
        60..=67 => (stress_sql(rng).into_bytes(), false),
        68..=84 => {
            let base = rng.pick(SQL).as_bytes().to_vec();
            (mutate_sql(rng, &base), false)
        }
        85..=94 => (soup(rng).into_bytes(), false),
        _ => {
            let len = rng.len();
            (rng.bytes(len), false)
        }
    }
}

/// Valid but large or deeply nested statements.
pub(crate) fn stress_sql(rng: &mut Rng) -> String {
    let n = rng.pick(&[10, 100, 1_000, 5_000, 20_000]);
    match rng.below(12) {
        0 => format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
        1 => format!("SELECT 1{}", " + 1".repeat(n)),
        2 => format!("SELECT * FROM scratch WHERE {}false", "i = 1 OR ".repeat(n)),
        3 => format!("SELECT ARRAY[{}1]", "1, ".repeat(n)),
        4 => format!("SELECT {}true", "NOT ".repeat(n)),
        5 => format!("SELECT {}'b'", "'a' || ".repeat(n)),
        6 => "SELECT 1; ".repeat(n.min(2_000)),
        7 => format!("SELECT '{}'", "x".repeat(n * 50)),
        8 => format!("SELECT '{}{}'::jsonb", "[".repeat(n), "]".repeat(n)),
        9 => format!("SELECT '{}1{}'::int[]", "{".repeat(n), "}".repeat(n)),
        10 => format!(
            "SELECT {}1{}",
            "CASE WHEN true THEN ".repeat(n.min(2_000)),
            " END".repeat(n.min(2_000))
        ),
        _ => format!("SELECT 1 IN ({}1)", "1, ".repeat(n)),
    }
}

/// Random tokens, often after a plausible start.
pub(crate) fn soup(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.percent(70) {
        s.push_str(rng.pick(&[
            "SELECT ",
            "SELECT * FROM scratch ",
            "INSERT INTO scratch ",
            "UPDATE scratch SET ",
            "DELETE FROM scratch ",
            "WITH x AS (",
            "VALUES (",
            "CREATE MATERIALIZED VIEW scratch_tmp_mv AS SELECT ",
        ]));
    }
    for _ in 0..1 + rng.below(30) {
        s.push_str(rng.pick(TOKENS));
        s.push(' ');
    }
    s
}

pub(crate) fn mutate_sql(rng: &mut Rng, sql: &[u8]) -> Vec<u8> {
    let mut out = sql.to_vec();
    let pos = rng.below(out.len() + 1);
    match rng.below(8) {
        0 => out.truncate(pos),
        1 => out.insert(pos, 0),
        2 => {
            let bad = rng.pick(BAD_UTF8);
            out.splice(pos..pos, bad.iter().copied());
        }
        3 => mutate(rng, &mut out),
        4 => {
            let copy = out.clone();
            out.push(b';');
            out.extend(copy);
        }
        5 => {
            if pos < out.len() {
                out[pos] = 0x20 + rng.below(0x5f) as u8;
            }
        }
        6 => {
            let token = rng.pick(TOKENS).as_bytes();
            out.splice(pos..pos, token.iter().copied());
        }
        _ => {
            let len = rng.len();
            out.extend(rng.bytes(len));
        }
    }
    out
}

/// Parse / Bind / Describe / Execute / Close / Flush / Sync, mostly in a
/// sensible order, sometimes shuffled, with parts missing or repeated.
pub(crate) fn gen_extended(rng: &mut Rng, case: &mut Case, clean: bool) {
    let stmt: &[u8] = rng.pick(&[&b""[..], b"s1", b"s2", b"nope"]);
    let portal: &[u8] = rng.pick(&[&b""[..], b"p1", b"p2"]);
    let (sql, oids) = rng.pick(PARAM_SQL);
    let mut msgs: Vec<(Vec<u8>, bool)> = Vec::new();
    if rng.percent(85) {
        let declared: Vec<u32> = match rng.below(10) {
            0 => Vec::new(),
            1 => (0..rng.below(4)).map(|_| rng.pick(OIDS)).collect(),
            2 => oids.iter().copied().chain([rng.pick(OIDS)]).collect(),
            _ => oids.to_vec(),
        };
        if clean || rng.percent(90) {
            msgs.push((parse(stmt, sql.as_bytes(), &declared), true));
        } else {
            let (text, _) = gen_sql(rng);
            let ok = !text.contains(&0);
            msgs.push((parse(stmt, &text, &declared), ok));
        }
    }
    if rng.percent(80) {
        msgs.push((gen_bind(rng, portal, stmt, oids), true));
    }
    if rng.percent(40) {
        let kind = if rng.percent(90) {
            rng.pick(b"SP")
        } else {
            rng.byte()
        };
        let name = if kind == b'S' { stmt } else { portal };
        msgs.push((describe(kind, name), true));
    }
    if rng.percent(85) {
        let max_rows = rng.pick(&[0, 0, 0, 1, 2, -1, i32::MAX, i32::MIN]);
        msgs.push((execute(portal, max_rows), true));
    }
    if rng.percent(20) {
        let kind = if rng.percent(90) {
            rng.pick(b"SP")
        } else {
            rng.byte()
        };
        msgs.push((close(kind, if kind == b'S' { stmt } else { portal }), true));
    }
    if rng.percent(15) {
        msgs.push((flush(), true));
    }
    if rng.percent(85) {
        msgs.push((sync(), true));
    }
    if !msgs.is_empty() && rng.percent(15) {
        // Out of order.
        for i in (1..msgs.len()).rev() {
            let j = rng.below(i + 1);
            msgs.swap(i, j);
        }
    }
    if !msgs.is_empty() && rng.percent(10) {
        let i = rng.below(msgs.len());
        msgs.remove(i);
    }
    if !msgs.is_empty() && rng.percent(10) {
        let i = rng.below(msgs.len());
        let m = msgs[i].clone();
        msgs.insert(i, m);
    }
    for (m, ok) in msgs {
        case.add(m, ok);
    }
}

pub(crate) fn gen_bind(rng: &mut Rng, portal: &[u8], stmt: &[u8], oids: &[u32]) -> Vec<u8> {
    let n = match rng.below(40) {
        0..=1 => oids.len() + 1,
        2..=3 => oids.len().saturating_sub(1),
        4..=5 => rng.below(10),
        6 => 65_535,
        _ => oids.len(),
    };
    let binary_all = rng.percent(30);
    let formats: Vec<i16> = match rng.below(10) {
        0..=3 => {
            if binary_all {
                vec![1]
            } else {
                Vec::new()
            }
        }
        4..=6 => (0..n.min(100))
            .map(|_| if rng.percent(50) { 1 } else { 0 })
            .collect(),
        7 => vec![0],
        8 => vec![rng.pick(&[2, -1, 0x7fff, i16::MIN])],
        _ => (0..rng.below(5)).map(|_| rng.pick(&[0, 1, 2])).collect(),
    };
    let params: Vec<Option<Vec<u8>>> = (0..n)
        .map(|i| {
            if n > 100 || rng.percent(10) {
                return None;
            }
            let oid = oids.get(i).copied().unwrap_or_else(|| rng.pick(OIDS));
            let binary = match formats.len() {
                0 => false,
                1 => formats[0] == 1,
                _ => formats.get(i).is_some_and(|&f| f == 1),
            };
            Some(if binary {
                binary_value(rng, oid)
            } else {
                text_value(rng, oid)
            })
        })
        .collect();
    let results: Vec<i16> = match rng.below(8) {
        0..=4 => Vec::new(),
        5 => vec![1],
        6 => vec![1, 0, 1],
        _ => vec![rng.pick(&[2, -1, 0x7fff])],
    };
    bind(portal, stmt, &formats, &params, &results)
}
