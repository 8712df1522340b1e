#!/usr/bin/env bash
# Kill -9 of a compute process under load, measured.
#
# Starts a server with its workers in two compute processes, loads TPC-H
# at the given scale factor with all 22 views (ripple-tpch --no-stream),
# then commits one-row transactions into a side table from a writer while
# one compute process is killed with SIGKILL. Reports:
#   - the time from the kill until every view answers a read again (the
#     server starts a new cluster and gives it every table and view; a
#     read waits until a view is fresh through the latest write);
#   - how many acknowledged rows are missing afterwards (must be 0).
#
# Usage: bench/cluster/failover.sh [SF] [PROCESSES] [WORKERS]   (default 0.1 2 1)
# Needs psql; builds nothing (run `cargo build --release --workspace` first).
set -euo pipefail
cd "$(dirname "$0")/../.."
SF=${1:-0.1}
PROCESSES=${2:-2}
WORKERS=${3:-1}
BIN=${RIPPLE_BIN:-target/release/ripple}
TPCH=${RIPPLE_TPCH_BIN:-target/release/ripple-tpch}
DIR=$(mktemp -d /tmp/ripple-failover-XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PSQL=(psql -h 127.0.0.1 -p "$PORT" -U ripple -d ripple -qAtX)
"$BIN" --listen "127.0.0.1:$PORT" --data-dir "$DIR/data" --http-listen off \
    --cluster-processes "$PROCESSES" --workers "$WORKERS" > "$DIR/server.log" 2>&1 &
SERVER=$!
trap 'kill -9 $SERVER 2>/dev/null || true; rm -rf "$DIR"' EXIT
until "${PSQL[@]}" -c 'SELECT 1' >/dev/null 2>&1; do sleep 0.1; done
echo "loading TPC-H SF $SF with all 22 views..."
"$TPCH" --url "host=127.0.0.1 port=$PORT user=ripple dbname=ripple" --sf "$SF" --no-stream > "$DIR/tpch.txt" 2>&1
grep -E "^(server|q[0-9]+ .* ok|q[0-9]+ .*DIFF)" "$DIR/tpch.txt" | tail -3 || true
"${PSQL[@]}" -c 'CREATE TABLE acked (k bigint PRIMARY KEY)'

# The writer: one row per transaction, keys counted up; an acknowledged
# key is appended to a file.
(
    k=0
    end=$((SECONDS + 12))
    while [ $SECONDS -lt $end ]; do
        k=$((k + 1))
        if "${PSQL[@]}" -c "INSERT INTO acked VALUES ($k)" >/dev/null 2>&1; then echo "$k" >> "$DIR/acked"; fi
    done
) &
WRITER=$!
sleep 3
VICTIM=$(ps -o pid= --ppid "$SERVER" | head -1 | tr -d ' ')
KILLED=$(date +%s.%N)
kill -9 "$VICTIM"
echo "killed compute process $VICTIM"
# Every view answers again (a read waits until the views are fresh
# through the latest acknowledged write).
while true; do
    ok=1
    for n in $(seq -w 1 22); do
        "${PSQL[@]}" -c "SELECT count(*) FROM q$n" >/dev/null 2>&1 || { ok=0; break; }
    done
    [ $ok = 1 ] && break
    sleep 0.05
done
FRESH=$(date +%s.%N)
wait $WRITER
ACKED=$(wc -l < "$DIR/acked")
"${PSQL[@]}" -c 'SELECT k FROM acked' | sort -n > "$DIR/present"
MISSING=$(sort -n "$DIR/acked" | comm -23 - "$DIR/present" | wc -l)
grep -m1 -o "a new compute cluster serves.*\|restarting after the loss.*" "$DIR/server.log" || true
printf 'every view answering (fresh) again: %.2f s after the kill\n' "$(echo "$FRESH - $KILLED" | bc)"
echo "acknowledged rows: $ACKED, missing: $MISSING"

