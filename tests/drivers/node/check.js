// node-postgres (`pg`) and `pg-cursor` against a running server.
//
// Usage: (cd tests/drivers/node && npm ci) then
//        node tests/drivers/node/check.js [HOST] PORT
// (HOST defaults to 127.0.0.1; user and database are `ripple`, no password.)
//
// `pg` sends a query with parameters as Parse/Bind/Describe/Execute/Sync on
// the unnamed statement (a named one when the query has a `name`), with
// parameters and results in text format. `pg-cursor` sends Parse, Bind to a
// named portal (`C_<n>`), Describe portal and Flush -- no Sync -- then, per
// read(n), Execute(portal, max_rows = n) + Flush, and expects PortalSuspended
// after n rows until the last batch ends with CommandComplete; it then
// sends Close(portal) + Sync. Closing a cursor early sends Close + Sync too.
//
// Each check uses its own connection, prints `ok` or `FAIL`, and the script
// exits 1 if any check failed. CHECK_ONLY=<substring> runs a subset.

'use strict'
const assert = require('assert/strict')
const { Client } = require('pg')
const Cursor = require('pg-cursor')

const args = process.argv.slice(2)
let host = '127.0.0.1'
let port
if (args.length === 1) port = Number(args[0])
else if (args.length === 2) [host, port] = [args[0], Number(args[1])]
else {
  console.error('usage: node check.js [HOST] PORT')
  process.exit(2)
}

async function connect() {
  const c = new Client({ host, port, user: 'ripple', database: 'ripple', connectionTimeoutMillis: 30000 })
  await c.connect()
  return c
}

async function withClient(fn) {
  const c = await connect()
  // An error the server sends while no query is active would otherwise crash node.
  c.on('error', (e) => console.error('client error event:', e.message))
  try {
    await fn(c)
  } finally {
    await c.end().catch(() => {})
  }
}

// Reads the whole cursor in batches of `n`; returns the batches' lengths and all rows.
async function drain(cursor, n) {
  const sizes = []
  const rows = []
  for (;;) {
    const batch = await cursor.read(n)
    if (batch.length === 0) break
    sizes.push(batch.length)
    rows.push(...batch)
  }
  return { sizes, rows }
}

const N = 10000

const checks = [
  ['connect and simple query', async () => withClient(async (c) => {
    const r = await c.query('SELECT 1 AS one, version() AS v')
    assert.equal(r.rows[0].one, 1)
    assert.match(r.rows[0].v, /^PostgreSQL/)
    // several statements in one simple query: pg returns one result per statement
    const multi = await c.query('SELECT 1 AS a; SELECT 2 AS b')
    assert.deepEqual(multi.map((x) => x.rows), [[{ a: 1 }], [{ b: 2 }]])
  })],

  ['startup parameters (application_name, statement_timeout, options)', async () => {
    // pg puts application_name, statement_timeout and options in the startup message.
    const c = new Client({
      host, port, user: 'ripple', database: 'ripple', application_name: 'drivers-check',
      statement_timeout: 5000, options: '-c search_path=public',
    })
    await c.connect()
    try {
      const r = await c.query(`SELECT current_setting('application_name') AS app,
        current_setting('statement_timeout') AS timeout, current_setting('search_path') AS path`)
      const bad = []
      if (r.rows[0].app !== 'drivers-check') bad.push(`application_name = ${r.rows[0].app}`)
      if (r.rows[0].timeout !== '5s') bad.push(`statement_timeout = ${r.rows[0].timeout} (want 5s)`)
      if (r.rows[0].path !== 'public') bad.push(`search_path = ${r.rows[0].path} (want public, from options -c)`)
      assert.ok(bad.length === 0, `startup parameters not applied: ${bad.join('; ')}`)
    } finally {
      await c.end()
    }
  }],

  ['parameterized queries', async () => withClient(async (c) => {
    await c.query('DROP TABLE IF EXISTS node_items')
    await c.query(`CREATE TABLE node_items (id integer NOT NULL PRIMARY KEY, big bigint, name text,
                   amount numeric(12,3), ratio double precision, flag boolean, created timestamp, day date, doc jsonb)`)
    const rows = []
    for (let i = 1; i <= 50; i++) {
      rows.push(i % 7 === 3
        ? [i, null, null, null, null, null, null, null, null]
        : [i, String(BigInt(i) * 9007199254740993n), `it's "${i}" ✓`, (i * 1.125).toFixed(3), i / 3, i % 2 === 0,
          `2024-0${1 + (i % 9)}-1${i % 10} 12:34:56.${String(i * 10 + 1).padStart(6, '0')}`, `${1950 + i}-02-28`,
          { i, tags: ['a', i % 3], nested: { even: i % 2 === 0 } }])
    }
    for (const r of rows) {
      const res = await c.query('INSERT INTO node_items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', r)
      assert.equal(res.rowCount, 1)
    }
    const got = await c.query(`SELECT id, big, name, amount, ratio, flag, created::text AS created, day::text AS day, doc
                               FROM node_items WHERE id >= $1 AND id <= $2 ORDER BY id`, [1, 50])
    assert.equal(got.rows.length, 50)
    for (let k = 0; k < 50; k++) {
      const w = rows[k]
      const g = got.rows[k]
      const want = {
        id: w[0], big: w[1], name: w[2], amount: w[3], ratio: w[4], flag: w[5], created: w[6], day: w[7], doc: w[8],
      }
      assert.deepEqual(g, want, `row ${w[0]}`)
    }
    // parameters of each type in WHERE clauses
    const one = async (sql, vals) => (await c.query(sql, vals)).rows[0].n
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE name = $1', [rows[4][2]]), 1, 'text param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE big = $1', [rows[4][1]]), 1, 'bigint param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE amount = $1', ['5.625']), 1, 'numeric param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE flag = $1', [true]),
      rows.filter((r) => r[5] === true).length, 'bool param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE doc @> $1', [{ tags: [2] }]),
      rows.filter((r) => r[8] && r[0] % 3 === 2).length, 'jsonb param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE day < $1::date', ['1960-01-01']),
      rows.filter((r) => r[7] && r[7] < '1960-01-01').length, 'date param')
    assert.equal(await one('SELECT count(*)::int AS n FROM node_items WHERE big IS NULL AND $1::text IS NULL', [null]),
      rows.filter((r) => r[1] === null).length, 'NULL param')
    assert.deepEqual((await c.query('SELECT $1::int[] AS a', [[1, 2, 3]])).rows[0].a, [1, 2, 3], 'array param')
    // a named prepared statement, executed several times
    for (let i = 1; i <= 5; i++) {
      const r = await c.query({ name: 'node_by_id', text: 'SELECT id, name FROM node_items WHERE id = $1', values: [i] })
      assert.deepEqual(r.rows, [{ id: i, name: rows[i - 1][2] }], `named statement, id ${i}`)
    }
    // rowMode array and a type check on result fields
    const arr = await c.query({ text: 'SELECT id, name FROM node_items WHERE id = $1', values: [2], rowMode: 'array' })
    assert.deepEqual(arr.rows, [[2, rows[1][2]]])
    assert.deepEqual(arr.fields.map((f) => [f.name, f.dataTypeID]), [['id', 23], ['name', 25]])
    // an error, then the connection still works
    await assert.rejects(c.query('SELECT 1 / $1::int', [0]), (e) => e.code === '22012')
    assert.equal((await c.query('SELECT $1::int + 1 AS x', [41])).rows[0].x, 42)
  })],

  ['transaction', async () => withClient(async (c) => {
    await c.query('DROP TABLE IF EXISTS node_tx')
    await c.query('CREATE TABLE node_tx (id integer NOT NULL PRIMARY KEY, v text)')
    await c.query('BEGIN')
    await c.query('INSERT INTO node_tx VALUES ($1, $2)', [1, 'a'])
    assert.equal((await c.query('SELECT count(*)::int AS n FROM node_tx')).rows[0].n, 1, 'own write visible')
    await c.query('COMMIT')
    await c.query('BEGIN')
    await c.query('INSERT INTO node_tx VALUES ($1, $2)', [2, 'b'])
    await c.query('ROLLBACK')
    assert.deepEqual((await c.query('SELECT id FROM node_tx ORDER BY id')).rows, [{ id: 1 }], 'after rollback')
    // an error aborts the transaction until ROLLBACK
    await c.query('BEGIN')
    await c.query('INSERT INTO node_tx VALUES ($1, $2)', [3, 'c'])
    await assert.rejects(c.query('INSERT INTO node_tx VALUES ($1, $2)', [1, 'dup']), (e) => e.code === '23505')
    await assert.rejects(c.query('SELECT 1'), (e) => e.code === '25P02')
    await c.query('ROLLBACK')
    assert.deepEqual((await c.query('SELECT id FROM node_tx ORDER BY id')).rows, [{ id: 1 }], 'after aborted transaction')
  })],

  [`pg-cursor: generate_series(1, ${N}) in batches of 100`, async () => withClient(async (c) => {
    const cursor = c.query(new Cursor('SELECT g AS n, g * 2 AS twice FROM generate_series(1, $1::int) AS g ORDER BY g', [N]))
    const { sizes, rows } = await drain(cursor, 100)
    assert.equal(rows.length, N)
    assert.ok(sizes.every((s) => s === 100), `batch sizes ${JSON.stringify([...new Set(sizes)])}`)
    assert.equal(sizes.length, N / 100)
    rows.forEach((r, k) => assert.deepEqual(r, { n: k + 1, twice: 2 * (k + 1) }, `row ${k + 1}`))
    await cursor.close()
    assert.equal((await c.query('SELECT $1::int AS x', [7])).rows[0].x, 7, 'query after cursor')
  })],

  ['pg-cursor: table, uneven batches, close mid-way, then a query', async () => withClient(async (c) => {
    await c.query('DROP TABLE IF EXISTS node_big')
    await c.query('CREATE TABLE node_big (id integer NOT NULL PRIMARY KEY, label text)')
    await c.query(`INSERT INTO node_big SELECT g, 'row ' || g FROM generate_series(1, ${N}) AS g`)
    let cursor = c.query(new Cursor('SELECT id, label FROM node_big WHERE id > $1 ORDER BY id', [0]))
    const { sizes, rows } = await drain(cursor, 333)
    assert.equal(rows.length, N)
    assert.deepEqual(sizes.slice(0, -1), Array(sizes.length - 1).fill(333))
    assert.equal(sizes[sizes.length - 1], N % 333)
    assert.deepEqual(rows[N - 1], { id: N, label: `row ${N}` })
    // close after three batches of 100
    cursor = c.query(new Cursor('SELECT id FROM node_big ORDER BY id'))
    for (let b = 0; b < 3; b++) {
      const batch = await cursor.read(100)
      assert.deepEqual(batch.map((r) => r.id), Array.from({ length: 100 }, (_, k) => b * 100 + k + 1), `batch ${b}`)
    }
    await cursor.close()
    const r = await c.query('SELECT count(*)::int AS n, max(id) AS m FROM node_big WHERE id > $1', [N - 10])
    assert.deepEqual(r.rows, [{ n: 10, m: N }], 'query after closing a cursor mid-way')
    const s = await c.query('SELECT 1 AS one')
    assert.deepEqual(s.rows, [{ one: 1 }], 'simple query after closing a cursor mid-way')
  })],

  ['pg-cursor inside a transaction, closed mid-way', async () => withClient(async (c) => {
    await c.query('BEGIN')
    const cursor = c.query(new Cursor('SELECT g FROM generate_series(1, 5000) AS g ORDER BY g'))
    assert.deepEqual((await cursor.read(100)).length, 100)
    assert.deepEqual((await cursor.read(100))[0], { g: 101 })
    await cursor.close()
    assert.equal((await c.query('SELECT 5 AS five')).rows[0].five, 5)
    await c.query('COMMIT')
    assert.equal((await c.query('SELECT 6 AS six')).rows[0].six, 6)
  })],

  ['pg-cursor: empty result, read past the end, read(1)', async () => withClient(async (c) => {
    let cursor = c.query(new Cursor('SELECT g FROM generate_series(1, 10) AS g WHERE g > 100'))
    assert.deepEqual(await cursor.read(100), [])
    assert.deepEqual(await cursor.read(100), [])
    await cursor.close()
    cursor = c.query(new Cursor('SELECT g FROM generate_series(1, 3) AS g ORDER BY g'))
    assert.deepEqual(await cursor.read(1), [{ g: 1 }])
    assert.deepEqual(await cursor.read(1), [{ g: 2 }])
    assert.deepEqual(await cursor.read(5), [{ g: 3 }])
    assert.deepEqual(await cursor.read(5), [])
    await cursor.close()
    assert.equal((await c.query('SELECT 1 AS x')).rows[0].x, 1)
  })],

  ['pg-cursor: error in a later batch, then a query', async () => withClient(async (c) => {
    const cursor = c.query(new Cursor('SELECT 10 / (500 - g) AS q FROM generate_series(1, 1000) AS g ORDER BY g'))
    let err = null
    try {
      await drain(cursor, 100)
    } catch (e) {
      err = e
    }
    assert.ok(err && err.code === '22012', `expected division_by_zero, got ${err && (err.code + ' ' + err.message)}`)
    await cursor.close()
    assert.equal((await c.query('SELECT $1::text AS t', ['still here'])).rows[0].t, 'still here')
  })],
]

async function main() {
  const only = process.env.CHECK_ONLY
  const failed = []
  let ran = 0
  for (const [name, fn] of checks) {
    if (only && !name.includes(only)) continue
    ran++
    let timer
    try {
      await Promise.race([
        fn(),
        new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('timed out after 60 s')), 60000) }),
      ])
      console.log(`ok   ${name}`)
    } catch (e) {
      failed.push(name)
      const extra = e.code && !String(e.code).startsWith('ERR') ? ` [SQLSTATE ${e.code}]` : ''
      console.log(`FAIL ${name}: ${e.message}${extra}`)
    } finally {
      clearTimeout(timer)
    }
  }
  if (failed.length) {
    console.error(`\n${failed.length} of ${ran} node checks failed: ${failed.join('; ')}`)
    process.exit(1)
  }
  console.log(`all ${ran} node checks passed`)
  process.exit(0)
}

main()
