#!/usr/bin/env bash
# Instructions the server executes per pgbench transaction, counted by
# callgrind: the same count for the same binary and load, where TPS on a
# shared machine varies by a third from run to run. For comparing builds
# of ripple, not for comparing with PostgreSQL.
#
#   bench/pgbench/instructions.sh [--bin PATH] [--transactions N] [-- pgbench options]
#   bench/pgbench/instructions.sh -- -S -M prepared      # select-only, prepared
#   bench/pgbench/instructions.sh -- -M prepared         # TPC-B, prepared
#
# Starts a server on a scale-1 pgbench database under valgrind with
# instrumentation off, runs 20 transactions per client to make the
# prepared statements' plans, counts 8 clients x N transactions (100 by
# default), and prints the instructions per transaction of the whole
# server and of each thread (callgrind --separate-threads). Needs
# valgrind (Debian's `valgrind`) and pgbench (`postgresql-client`).
set -euo pipefail
BIN=target/release/ripple
T=100
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --transactions) T=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1 (pgbench options go after --)" >&2; exit 2 ;;
  esac
done
for tool in valgrind callgrind_control pgbench pg_isready; do
  command -v "$tool" > /dev/null || { echo "$tool is missing: apt-get install valgrind postgresql-client" >&2; exit 1; }
done
[ -x "$BIN" ] || cargo build --release
PORT=${RIPPLE_BENCH_PORT:-6899}
export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=ripple PGDATABASE=ripple
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
# The database is made by a server run natively (fast), then counted on.
"$BIN" --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" > "$WORK/init.log" 2>&1 &
SERVER=$!
until pg_isready -q; do sleep 0.2; done
pgbench -i -q -s 1 > /dev/null 2>&1
kill $SERVER; wait $SERVER || true
valgrind --tool=callgrind --separate-threads=yes --instr-atstart=no --callgrind-out-file="$WORK/cg.out" \
  "$BIN" --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" > "$WORK/server.log" 2>&1 &
SERVER=$!
until pg_isready -q; do sleep 1; done
pgbench -n "$@" -c 8 -j 2 -t 20 > /dev/null 2>&1
callgrind_control -i on $SERVER > /dev/null 2>&1
pgbench -n "$@" -c 8 -j 2 -t "$T" | grep -E "^tps|processed"
callgrind_control -i off $SERVER > /dev/null 2>&1
kill $SERVER; wait $SERVER || true
N=$((8 * T))
total=0
for f in "$WORK"/cg.out*; do
  t=$(awk '/^totals:/ {print $2}' "$f")
  [ -n "$t" ] || continue
  total=$((total + t))
  [ "$t" -gt "$((100 * N))" ] && echo "  thread $(awk -F- '{print $NF}' <<< "$f"): $((t / N)) instructions per transaction"
done
echo "server: $((total / N)) instructions per transaction ($N transactions)"
