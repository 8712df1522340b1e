#!/usr/bin/env bash
# sqlsmith against ripple: random SQL from sqlsmith (Debian's `sqlsmith`
# package, 1.4) against a fresh server, checking that the server survives
# it.
#
# What it does:
#   1. installs sqlsmith, psql and python3 where missing (apt, with sudo
#      when not root; .ci/prereqs.sh);
#   2. starts ripple ($RIPPLE_BIN, default target/release/ripple; it builds
#      nothing) on a fresh data directory and a free port, and loads
#      fuzz/sqlsmith_schema.sql (tables of most types, a view, materialized
#      views, indexes) so that sqlsmith has something to query;
#   3. runs sqlsmith's catalog queries by hand and reports any that fail
#      (that is why sqlsmith could not start);
#   4. runs sqlsmith through fuzz/pgwire_tap.py, a pgwire proxy that records
#      every ErrorResponse with its SQLSTATE and statement, sessions the
#      server dropped, and statements that hang (SQLSMITH_SHIM=1, the
#      default, lets it rewrite the catalog queries ripple cannot answer);
#   5. watches the run: an incident ends it early —
#        - ripple exited (crash),
#        - ripple's RSS passed SQLSMITH_MAX_RSS_MB,
#        - sqlsmith made no progress for SQLSMITH_HANG_SECS (a statement
#          hangs although sqlsmith sets statement_timeout to 1 s);
#      and then checks that ripple is alive, answers `SELECT 1`, and logged
#      no panic, stack overflow or abort; that every error had a SQLSTATE
#      and no session was dropped. It prints sqlsmith's report, errors by
#      SQLSTATE and message, internal errors (XX000), the statements in
#      flight at an incident, ripple's RSS.
#   After an incident, if time is left, it starts over (fresh server, next
#   seed), so a long run collects several findings: each round's logs are in
#   $SQLSMITH_OUT/round-N. Exits 0 when every round passed every check.
#
# Knobs (environment):
#   SQLSMITH_SECS=300          total duration (the one-hour run: 3600)
#   SQLSMITH_SEED=N            sqlsmith's --seed of the first round (default:
#                              from the clock; printed); round k uses N+k-1
#   SQLSMITH_MAX_QUERIES=N     end each round after N statements
#   SQLSMITH_DUMP=1            also --dump-all-queries to round-N/sqlsmith.out
#   SQLSMITH_HANG_SECS=60      no progress for this long is a hang
#   SQLSMITH_MAX_RSS_MB=8192   ripple's RSS past this ends the round (the
#                              machine's memory is shared)
#   SQLSMITH_SHIM=1            let the tap rewrite the catalog queries ripple
#                              cannot answer (fuzz/pgwire_tap.py, SHIMS); 0
#                              sends sqlsmith's queries unchanged
#   SQLSMITH_EXCLUDE_CATALOG=1 sqlsmith's --exclude-catalog: statements read
#                              only the schema's tables and views, not
#                              pg_catalog or information_schema
#   SQLSMITH_RESTART=1         start a new round after an incident; 0 stops
#   SQLSMITH_OUT=DIR           where the logs go (default: a new temp dir)
#   RIPPLE_BIN=PATH            the server binary
#   RIPPLE_WORKERS=1           the server's --workers
#   RIPPLE_ARGS="..."          more server arguments (e.g. --memory-limit 2GB)
#
# Example (the one-hour run of fuzz/README.md):
#   cargo build --release && SQLSMITH_SECS=3600 fuzz/sqlsmith.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${SQLSMITH_SECS:-300}
SEED=${SQLSMITH_SEED:-$(($(date +%s) % 1000000))}
MAX_QUERIES=${SQLSMITH_MAX_QUERIES:-}
HANG=${SQLSMITH_HANG_SECS:-60}
MAX_RSS_MB=${SQLSMITH_MAX_RSS_MB:-8192}
RIPPLE_BIN=${RIPPLE_BIN:-target/release/ripple}
WORKERS=${RIPPLE_WORKERS:-1}
OUT=${SQLSMITH_OUT:-$(mktemp -d /tmp/ripple-sqlsmith-XXXXXX)}
mkdir -p "$OUT"

# shellcheck source=../.ci/prereqs.sh
source .ci/prereqs.sh
packages=()
command -v sqlsmith >/dev/null 2>&1 || packages+=(sqlsmith)
command -v psql >/dev/null 2>&1 || packages+=(postgresql-client)
command -v python3 >/dev/null 2>&1 || packages+=(python3)
install_packages

if [ ! -x "$RIPPLE_BIN" ]; then
    echo "no ripple binary at $RIPPLE_BIN: run 'cargo build --release' or set RIPPLE_BIN" >&2
    exit 2
fi

RIPPLE_PID=""
TAP_PID=""
SQLSMITH_PID=""
PORT=""
RUN=""

# Ends what this script started, by pid.
stop_all() {
    local pid
    for pid in "$SQLSMITH_PID" "$TAP_PID"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    SQLSMITH_PID=""
    TAP_PID=""
    if [ -n "$RIPPLE_PID" ] && kill -0 "$RIPPLE_PID" 2>/dev/null; then
        kill "$RIPPLE_PID" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$RIPPLE_PID" 2>/dev/null || break
            sleep 0.2
        done
        kill -9 "$RIPPLE_PID" 2>/dev/null || true
        wait "$RIPPLE_PID" 2>/dev/null || true
    fi
    RIPPLE_PID=""
    if [ -n "$RUN" ]; then
        rm -rf "$RUN/data"
    fi
}
trap stop_all EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

psql_ripple() {
    timeout 60 psql -X -h 127.0.0.1 -p "$PORT" -U ripple -d ripple "$@"
}

rss_kb() {
    awk '/^VmRSS/{print $2}' /proc/"$RIPPLE_PID"/status 2>/dev/null || echo 0
}

# Starts ripple on a fresh data directory in $RUN and loads the schema.
start_ripple() {
    PORT=$(free_port)
    # shellcheck disable=SC2086 # RIPPLE_ARGS is split on purpose
    "$RIPPLE_BIN" --data-dir "$RUN/data" --listen "127.0.0.1:$PORT" --workers "$WORKERS" \
        ${RIPPLE_ARGS:-} >"$RUN/ripple.log" 2>&1 &
    RIPPLE_PID=$!
    for i in $(seq 600); do
        if ! kill -0 "$RIPPLE_PID" 2>/dev/null; then
            echo "ripple exited during start-up:" >&2
            tail -n 40 "$RUN/ripple.log" >&2
            exit 1
        fi
        psql_ripple -qtAc 'SELECT 1' >/dev/null 2>&1 && break
        [ "$i" -eq 600 ] && { echo "ripple did not start within 60 s" >&2; exit 1; }
        sleep 0.1
    done
    psql_ripple -q -v ON_ERROR_STOP=1 -f fuzz/sqlsmith_schema.sql >"$RUN/schema.log" 2>&1 || {
        echo "loading fuzz/sqlsmith_schema.sql failed:" >&2
        cat "$RUN/schema.log" >&2
        exit 1
    }
}

# sqlsmith's catalog queries as sqlsmith 1.4 sends them (to a server
# reporting version >= 11): each must run, or sqlsmith cannot start unless
# the tap rewrites it. pg_proc and pg_operator without rows leave sqlsmith
# with no functions or operators to call.
check_catalog() {
    local q result
    local queries=(
        "select version()"
        "SHOW server_version_num"
        "select case typnamespace when 'pg_catalog'::regnamespace then quote_ident(typname) else format('%I.%I', typnamespace::regnamespace, typname) end, oid, typdelim, typrelid, typelem, typarray, typtype from pg_type "
        "select table_name, table_schema, is_insertable_into, table_type from information_schema.tables"
        "select attname, atttypid from pg_attribute join pg_class c on( c.oid = attrelid ) join pg_namespace n on n.oid = relnamespace where not attisdropped and attname not in ('xmin', 'xmax', 'ctid', 'cmin', 'cmax', 'tableoid', 'oid')  and relname = 'nums' and nspname = 'public'"
        "select conname from pg_class t join pg_constraint c on (t.oid = c.conrelid) where contype in ('f', 'u', 'p')  and relnamespace =  (select oid from pg_namespace where nspname = 'public') and relname = 'nums'"
        "select oprname, oprleft,oprright, oprresult from pg_catalog.pg_operator where 0 not in (oprresult, oprright, oprleft) "
        "select (select nspname from pg_namespace where oid = pronamespace), oid, prorettype, proname from pg_proc where prorettype::regtype::text not in ('event_trigger', 'trigger', 'opaque', 'internal') and proname <> 'pg_event_trigger_table_rewrite_reason' and proname <> 'pg_event_trigger_table_rewrite_oid' and proname !~ '^ri_fkey_' and not (proretset or prokind = 'a' or prokind = 'w') "
        "select (select nspname from pg_namespace where oid = pronamespace), oid, prorettype, proname from pg_proc where prorettype::regtype::text not in ('event_trigger', 'trigger', 'opaque', 'internal') and proname not in ('pg_event_trigger_table_rewrite_reason') and proname not in ('percentile_cont', 'dense_rank', 'cume_dist', 'rank', 'test_rank', 'percent_rank', 'percentile_disc', 'mode', 'test_percentile_disc') and proname !~ '^ri_fkey_' and not (proretset or prokind = 'w') and prokind = 'a'"
        "select typname from pg_type where typname in ('internal', 'anyarray')"
    )
    echo "== sqlsmith's catalog queries (rows, or the error)"
    for q in "${queries[@]}"; do
        if result=$(psql_ripple -qtA -v VERBOSITY=verbose -c "$q" 2>&1); then
            echo "  ok, $(printf '%s' "$result" | grep -c '') rows: ${q:0:100}"
        else
            echo "  FAILS: $q"
            printf '%s\n' "$result" | sed 's/^/      /'
        fi
    done
}

start_tap() {
    local args=()
    [ "${SQLSMITH_SHIM:-1}" = 1 ] && args+=(--shim)
    rm -f "$RUN/tap.port"
    python3 fuzz/pgwire_tap.py serve --upstream "127.0.0.1:$PORT" --port-file "$RUN/tap.port" \
        --events "$RUN/events.jsonl" --slow 5 "${args[@]}" 2>"$RUN/tap.log" &
    TAP_PID=$!
    for _ in $(seq 100); do
        [ -s "$RUN/tap.port" ] && break
        sleep 0.1
    done
}

# One round: a fresh server, sqlsmith for at most $1 seconds with seed $2.
# Sets `incident` (empty if none) and `round_failed`.
run_round() {
    local secs=$1 seed=$2
    incident=""
    round_failed=0
    start_ripple
    [ "$round" -eq 1 ] && check_catalog
    start_tap
    local args=(--target="host=127.0.0.1 port=$(cat "$RUN/tap.port") user=ripple dbname=ripple sslmode=disable"
        --seed="$seed" --verbose)
    [ -n "$MAX_QUERIES" ] && args+=(--max-queries="$MAX_QUERIES")
    [ "${SQLSMITH_DUMP:-0}" = 1 ] && args+=(--dump-all-queries)
    [ "${SQLSMITH_EXCLUDE_CATALOG:-0}" = 1 ] && args+=(--exclude-catalog)
    echo
    echo "== round $round: seed $seed, up to ${secs}s, ripple pid $RIPPLE_PID port $PORT, logs in $RUN"
    local started
    started=$(date +%s)
    # SIGINT makes sqlsmith print its report (queries, errors by message)
    # and exit; -k kills it if it does not.
    timeout -s INT -k 30 "$secs" sqlsmith "${args[@]}" >"$RUN/sqlsmith.out" 2>"$RUN/sqlsmith.log" &
    SQLSMITH_PID=$!
    local size last_size=-1 last_progress rss
    last_progress=$(date +%s)
    while kill -0 "$SQLSMITH_PID" 2>/dev/null; do
        rss=$(rss_kb)
        echo "$(($(date +%s) - started)) ${rss:-0}" >>"$RUN/rss.log"
        if ! kill -0 "$RIPPLE_PID" 2>/dev/null; then
            incident="ripple exited"
        elif [ "${rss:-0}" -gt $((MAX_RSS_MB * 1024)) ]; then
            incident="ripple's RSS passed $MAX_RSS_MB MiB"
        fi
        # sqlsmith writes one character per statement to its log.
        size=$(stat -c %s "$RUN/sqlsmith.log" 2>/dev/null || echo 0)
        if [ "$size" != "$last_size" ]; then
            last_size=$size
            last_progress=$(date +%s)
        elif [ $(($(date +%s) - last_progress)) -gt "$HANG" ]; then
            incident="no statement finished for ${HANG}s"
        fi
        if [ -n "$incident" ]; then
            kill -INT "$SQLSMITH_PID" 2>/dev/null || true
            break
        fi
        sleep 2
    done
    set +e
    wait "$SQLSMITH_PID"
    local rc=$?
    set -e
    SQLSMITH_PID=""
    local elapsed=$(($(date +%s) - started))
    # Let the tap see the sessions end.
    sleep 1

    echo "-- sqlsmith: exit $rc after ${elapsed}s"
    if grep -q '^queries: ' "$RUN/sqlsmith.log"; then
        # Its last report: statements, AST stats, errors by first line,
        # error rate (the impedance report is left out).
        awk '/^queries: /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$RUN/sqlsmith.log" |
            sed '/^impedance report/,$d' | head -n 40
    else
        echo "sqlsmith printed no report; its log ends with:"
        tail -c 3000 "$RUN/sqlsmith.log"
        echo
        if [ -z "$incident" ] && [ "$elapsed" -lt "$secs" ]; then
            incident="sqlsmith stopped by itself (could it not load the catalog? see the errors below)"
        fi
    fi

    echo "-- ripple"
    if [ -n "$incident" ]; then
        echo "FAIL: $incident after ${elapsed}s; the statements in flight are listed below"
        round_failed=1
    fi
    echo "RSS (s kB), every 2 s, last of $RUN/rss.log: $(tail -n 1 "$RUN/rss.log" 2>/dev/null)"
    if kill -0 "$RIPPLE_PID" 2>/dev/null; then
        echo "process $RIPPLE_PID alive; peak RSS $(awk '/^VmHWM/{print $2, $3}' /proc/"$RIPPLE_PID"/status)"
        if [ "$(psql_ripple -qtAc 'SELECT 1' 2>&1)" = 1 ]; then
            echo "answers SELECT 1"
        else
            echo "FAIL: does not answer SELECT 1 within 60 s"
            round_failed=1
        fi
    else
        set +e
        wait "$RIPPLE_PID"
        local status=$?
        set -e
        RIPPLE_PID=""
        echo "FAIL: ripple exited (status $status)"
        round_failed=1
    fi
    if grep -nE 'panicked|has overflowed its stack|stack overflow|fatal runtime error|SIGSEGV|SIGABRT|[Aa]bort(ed|ing)|core dumped' \
        "$RUN/ripple.log" >"$RUN/ripple.crashes"; then
        echo "FAIL: ripple's log has $(wc -l <"$RUN/ripple.crashes") panic/abort lines, first:"
        head -n 20 "$RUN/ripple.crashes"
        round_failed=1
    else
        echo "no panic, stack overflow or abort in its log ($(wc -l <"$RUN/ripple.log") lines)"
    fi
    stop_all
    echo "-- errors the server sent (SQLSTATE, then message with literals and numbers elided)"
    python3 fuzz/pgwire_tap.py summary --events "$RUN/events.jsonl" --hang "$HANG" || round_failed=1
}

echo "sqlsmith against ripple: ${SECS}s from seed $SEED, logs in $OUT"
echo "ripple: $RIPPLE_BIN ($("$RIPPLE_BIN" --version 2>/dev/null || true))"
deadline=$(($(date +%s) + SECS))
round=0
failed_rounds=0
incidents=()
while :; do
    round=$((round + 1))
    RUN="$OUT/round-$round"
    mkdir -p "$RUN"
    left=$((deadline - $(date +%s)))
    run_round "$left" $((SEED + round - 1))
    if [ "$round_failed" -ne 0 ]; then
        failed_rounds=$((failed_rounds + 1))
        incidents+=("round $round (seed $((SEED + round - 1))): ${incident:-checks failed}")
    fi
    [ "${SQLSMITH_RESTART:-1}" = 1 ] || break
    [ $((deadline - $(date +%s))) -gt 30 ] || break
    [ -n "$MAX_QUERIES" ] && [ "$round_failed" -eq 0 ] && break
done

echo
echo "== $round rounds in $((SECS - (deadline - $(date +%s))))s, $failed_rounds failed"
for i in "${incidents[@]+"${incidents[@]}"}"; do
    echo "  $i"
done
if [ "$failed_rounds" -eq 0 ]; then
    echo "sqlsmith run passed (logs in $OUT)"
    exit 0
fi
echo "sqlsmith run FAILED (logs in $OUT/round-N: ripple.log, sqlsmith.log, events.jsonl)"
exit 1
