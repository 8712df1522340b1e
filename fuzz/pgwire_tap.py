#!/usr/bin/env python3
"""A pgwire tap for fuzz runs: a TCP proxy between a client (sqlsmith) and
ripple that records what libpq does not show.

sqlsmith prints only the first line of each error, not its SQLSTATE, and
cannot tell a server that dropped a session from one that refused a query.
The tap forwards every byte unchanged and parses both directions of the
Postgres v3 protocol (simple and extended query), writing one JSON object
per line to EVENTS:

  {"ev": "error", "sqlstate": "42883", "severity": "ERROR",
   "message": "...", "query": "..."}   an ErrorResponse ("sqlstate" is null
                                       when the server sent none)
  {"ev": "slow", "secs": 12.3, "query": "..."}
                                       a query that took longer than --slow
  {"ev": "lost", "query": "...", "in_flight_secs": 3.2}
                                       the server closed a session the client
                                       had not terminated
  {"ev": "abandoned", "secs": 40.1, "query": "..."}
                                       a query the client stopped waiting for
                                       (it closed the session)
  {"ev": "in_flight", "secs": 40.1, "query": "..."}
                                       written at exit for queries still
                                       waiting for an answer (a hang)
  {"ev": "stmt", "session": N, "secs": 0.01, "query": "..."}
                                       every statement, with --log-all
  {"ev": "shim", "original": "...", "rewritten": "..."}
                                       a catalog query rewritten (--shim)
  {"ev": "stats", "sessions": N, "queries": N}
                                       written at exit

SSLRequest and GSSENCRequest are answered 'N' by the tap itself (clients
fall back to plain text); CancelRequest is passed through.

Usage:
  pgwire_tap.py serve --upstream 127.0.0.1:PORT --port-file F --events F [--slow SECS]
      listens on a free 127.0.0.1 port, writes it to --port-file, runs until
      SIGTERM/SIGINT.
  pgwire_tap.py summary --events F [--hang SECS]
      prints counts of queries and errors by SQLSTATE and message, and exits
      1 if an error had no SQLSTATE, a session was lost, or a query took
      longer than --hang seconds (default 60).
"""

import argparse
import asyncio
import json
import os
import re
import signal
import struct
import sys
import time
from collections import Counter, defaultdict

# --shim: sqlsmith's catalog queries that ripple cannot answer, each
# replaced by an equivalent it can (the prefix of the original, the
# replacement). Every rewrite is logged ({"ev": "shim"}).
#
# sqlsmith 1.4's type query calls format() (ripple has none: 42883), and
# sqlsmith asserts that pg_type has the pseudo-types internal and anyarray
# (ripple lists only concrete types). Every type ripple has is in
# pg_catalog, so quote_ident(typname) is what format() would give.
SHIMS = [
    (
        "select case typnamespace when 'pg_catalog'::regnamespace then quote_ident(typname) ",
        "select quote_ident(typname), oid, typdelim, typrelid, typelem, typarray, typtype from pg_type "
        "union all select v.* from (values "
        "('internal', 2281::oid, ','::\"char\", 0::oid, 0::oid, 0::oid, 'p'::\"char\"), "
        "('anyarray', 2277::oid, ',', 0::oid, 0::oid, 0::oid, 'p')) v "
        "where not exists (select 1 from pg_type where typname = v.column1)",
    ),
]

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102


class Tap:
    def __init__(self, upstream, events_path, slow, shim, log_all):
        host, port = upstream.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.events = open(events_path, "a", buffering=1)
        self.slow = slow
        self.shim = shim
        self.log_all = log_all
        self.sessions = 0
        self.queries = 0
        # session id -> (start time, query text) of the query awaiting
        # ReadyForQuery.
        self.in_flight = {}

    def emit(self, **ev):
        self.events.write(json.dumps(ev) + "\n")

    async def handle(self, creader, cwriter):
        sid = self.sessions = self.sessions + 1
        try:
            await self.session(sid, creader, cwriter)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            started = self.in_flight.pop(sid, None)
            if started is not None:
                # The client went away while waiting for an answer.
                self.emit(ev="abandoned", secs=round(time.monotonic() - started[0], 3), query=started[1])
            cwriter.close()

    async def session(self, sid, creader, cwriter):
        # Startup phase: untagged messages until the StartupMessage.
        while True:
            head = await creader.readexactly(8)
            length, code = struct.unpack("!ii", head)
            rest = await creader.readexactly(length - 8)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                cwriter.write(b"N")
                await cwriter.drain()
                continue
            break
        sreader, swriter = await asyncio.open_connection(self.host, self.port)
        swriter.write(head + rest)
        await swriter.drain()
        if code == CANCEL_REQUEST:
            await swriter.drain()
            await sreader.read()
            swriter.close()
            return
        state = {"terminated": False, "query": None}
        up = asyncio.ensure_future(self.client_to_server(sid, state, creader, swriter))
        down = asyncio.ensure_future(self.server_to_client(sid, state, sreader, cwriter))
        done, _ = await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        if down in done and not state["terminated"]:
            # The server ended the session; give the client's Terminate a
            # moment to arrive (it may have been sent just before).
            try:
                await asyncio.wait_for(asyncio.shield(up), 0.5)
            except (asyncio.TimeoutError, Exception):
                pass
            if not state["terminated"]:
                started = self.in_flight.get(sid, (None, None))[0]
                self.emit(
                    ev="lost",
                    query=state["query"],
                    in_flight_secs=None if started is None else round(time.monotonic() - started, 3),
                )
        for t in (up, down):
            t.cancel()
        swriter.close()

    async def client_to_server(self, sid, state, creader, swriter):
        while True:
            head = await creader.readexactly(5)
            tag = head[:1]
            (length,) = struct.unpack("!i", head[1:])
            body = await creader.readexactly(length - 4)
            if tag == b"Q":
                text = body[:-1].decode("utf-8", "replace")
                if self.shim:
                    for prefix, replacement in SHIMS:
                        if text.startswith(prefix):
                            self.emit(ev="shim", original=text, rewritten=replacement)
                            text = replacement
                            body = text.encode() + b"\0"
                            head = b"Q" + struct.pack("!i", len(body) + 4)
                self.begin(sid, state, text)
            elif tag == b"P":
                # Parse: statement name, then the query text.
                name_end = body.index(b"\0")
                text_end = body.index(b"\0", name_end + 1)
                self.begin(sid, state, body[name_end + 1 : text_end].decode("utf-8", "replace"))
            elif tag == b"X":
                state["terminated"] = True
            swriter.write(head + body)
            await swriter.drain()
            if tag == b"X":
                return

    def begin(self, sid, state, text):
        self.queries += 1
        state["query"] = text
        self.in_flight.setdefault(sid, (time.monotonic(), text))

    async def server_to_client(self, sid, state, sreader, cwriter):
        while True:
            try:
                head = await sreader.readexactly(5)
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    cwriter.write(e.partial)
                return
            tag = head[:1]
            (length,) = struct.unpack("!i", head[1:])
            body = await sreader.readexactly(length - 4)
            if tag == b"E":
                fields = {}
                for part in body.split(b"\0"):
                    if part:
                        fields[chr(part[0])] = part[1:].decode("utf-8", "replace")
                self.emit(
                    ev="error",
                    sqlstate=fields.get("C"),
                    severity=fields.get("V", fields.get("S")),
                    message=fields.get("M"),
                    query=state["query"],
                )
            elif tag == b"Z":
                started = self.in_flight.pop(sid, None)
                if started is not None:
                    secs = time.monotonic() - started[0]
                    if self.log_all:
                        self.emit(ev="stmt", session=sid, secs=round(secs, 3), query=started[1])
                    if secs > self.slow:
                        self.emit(ev="slow", secs=round(secs, 3), query=started[1])
            cwriter.write(head + body)
            await cwriter.drain()

    def finish(self):
        now = time.monotonic()
        for started, text in self.in_flight.values():
            self.emit(ev="in_flight", secs=round(now - started, 3), query=text)
        self.emit(ev="stats", sessions=self.sessions, queries=self.queries)
        self.events.close()


async def serve(args):
    tap = Tap(args.upstream, args.events, args.slow, args.shim, args.log_all)
    server = await asyncio.start_server(tap.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(args.port_file + ".tmp", "w") as f:
        f.write(f"{port}\n")
    os.replace(args.port_file + ".tmp", args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    tap.finish()
    server.close()


def normalize(message):
    """A message with its literals and numbers replaced, for grouping."""
    m = re.sub(r'"[^"]*"', '"…"', message or "")
    m = re.sub(r"'[^']*'", "'…'", m)
    m = re.sub(r"\b\d+(\.\d+)?\b", "N", m)
    return m[:100]


def summary(args):
    errors = []
    slow, lost, in_flight = [], [], []
    stats = Counter()
    with open(args.events) as f:
        for line in f:
            ev = json.loads(line)
            kind = ev["ev"]
            if kind == "error":
                errors.append(ev)
            elif kind == "slow":
                slow.append(ev)
            elif kind == "lost":
                lost.append(ev)
            elif kind in ("in_flight", "abandoned"):
                in_flight.append(ev)
            elif kind == "shim":
                stats["shim"] += 1
            elif kind == "stats":
                stats["sessions"] += ev["sessions"]
                stats["queries"] += ev["queries"]
    print(f"tap: {stats['sessions']} sessions, {stats['queries']} statements sent, {len(errors)} errors")
    if stats["shim"]:
        print(f"  ({stats['shim']} catalog queries rewritten by --shim)")
    by_state = Counter(e["sqlstate"] for e in errors)
    messages = defaultdict(Counter)
    for e in errors:
        messages[e["sqlstate"]][normalize(e["message"])] += 1
    for state, n in by_state.most_common():
        print(f"  {state or 'NO SQLSTATE'}: {n}")
        for msg, k in messages[state].most_common(args.top):
            print(f"      {k:7d}  {msg}")
        if len(messages[state]) > args.top:
            print(f"      ... {len(messages[state]) - args.top} more messages")
    bad = False
    missing = [e for e in errors if not e["sqlstate"]]
    if missing:
        bad = True
        print(f"FAIL: {len(missing)} errors without a SQLSTATE, e.g.:")
        for e in missing[:5]:
            print(f"  {e['message']!r}\n    query: {e['query']}")
    internal = [e for e in errors if e["sqlstate"] == "XX000"]
    if internal:
        print(f"NOTE: {len(internal)} internal errors (XX000), e.g.:")
        for e in internal[:5]:
            print(f"  {e['message']!r}\n    query: {e['query']}")
    if lost:
        bad = True
        print(f"FAIL: the server dropped {len(lost)} sessions, last queries:")
        for e in lost[:5]:
            print(f"  {e['query']}")
    if slow:
        print(f"{len(slow)} statements took longer than the tap's slow threshold; slowest:")
        for e in sorted(slow, key=lambda e: -e["secs"])[:5]:
            print(f"  {e['secs']:.1f} s  {e['query'][:300]}")
    waiting = [e for e in in_flight if e["secs"] > 1.5]
    if waiting:
        print(f"{len(waiting)} statements were still unanswered when their session ended (> 1.5 s):")
        for e in sorted(waiting, key=lambda e: -e["secs"])[:5]:
            print(f"  {e['secs']:.1f} s ({e['ev']})  {e['query'][:300]}")
    hung = [e for e in slow + in_flight if e["secs"] > args.hang]
    if hung:
        bad = True
        print(f"FAIL: {len(hung)} statements took longer than {args.hang} s (statement_timeout is 1 s):")
        for e in hung[:5]:
            print(f"  {e['secs']:.1f} s ({e['ev']})  {e['query'][:300]}")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--upstream", required=True)
    s.add_argument("--port-file", required=True)
    s.add_argument("--events", required=True)
    s.add_argument("--slow", type=float, default=5.0)
    s.add_argument("--shim", action="store_true", help="rewrite the catalog queries in SHIMS")
    s.add_argument("--log-all", action="store_true", help="log every statement with its time")
    m = sub.add_parser("summary")
    m.add_argument("--events", required=True)
    m.add_argument("--hang", type=float, default=60.0)
    m.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    if args.cmd == "serve":
        asyncio.run(serve(args))
        return 0
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())
