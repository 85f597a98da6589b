#!/usr/bin/env python3
"""Where a durable delegation's pages go: SQLite's log, table by table.

Starts `switchboard serve` on a fresh SQLite file (the bench's team), loads
it with wrk as scripts/bench.sh does, and meanwhile reads every frame the
server appends to the database's write-ahead log (`<db>-wal`). Each frame
is one page; at the end each page number is put to the table or index that
owns it (SQLite's `dbstat`), and the frames are divided by the requests
served. Prints, per served delegation, the log pages of each table and
index, largest first.

    scripts/bench/log_pages.py [--kind delegate|a2a] [--ids v4|v7] [--connections 64] [--seconds 5]

`--ids v7` sends time-ordered request ids (`BENCH_IDS=v7` in
scripts/bench/load.lua) instead of random ones.

Needs a release build (`SWITCHBOARD`, else target/release/switchboard) and
wrk. Reading a log that SQLite starts over after each full checkpoint: the
frames are read from where the last look stopped, and from the start again
when the log's salt changes (a new log); the frames written between the
last look and a restart are missed, a few in a thousand. No figure here
is a timing.
"""

import argparse
import collections
import json
import os
import re
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LogReader(threading.Thread):
    """Counts the frames appended to a WAL file, by page number."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.pages, self.frames = path, collections.Counter(), 0
        self.stopping = threading.Event()

    def run(self):
        salt, offset = None, 32
        while not self.stopping.is_set():
            try:
                with open(self.path, "rb") as f:
                    header = f.read(32)
                    if len(header) == 32:
                        page_size = struct.unpack(">I", header[8:12])[0]
                        if header[16:24] != salt:
                            salt, offset = header[16:24], 32
                        f.seek(offset)
                        while True:
                            frame = f.read(24)
                            # a frame of this log carries its salt; a shorter or older one is not (yet) ours
                            if len(frame) < 24 or frame[8:16] != salt:
                                break
                            f.seek(page_size, 1)
                            self.pages[struct.unpack(">I", frame[:4])[0]] += 1
                            self.frames += 1
                            offset += 24 + page_size
            except FileNotFoundError:
                pass
            time.sleep(0.002)


def wait_port(port, proc):
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("the server stopped at start")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("the server did not start")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrk(args, port, seconds):
    path, token = ("/a2a/echo", "bench-user-token") if args.kind == "a2a" else ("/", "bench-token")
    env = dict(os.environ, BENCH_KIND=args.kind, BENCH_TOKEN=token, BENCH_IDS=args.ids)
    out = subprocess.run(
        ["wrk", "-t2", f"-c{args.connections}", f"-d{seconds}s", "-s", "scripts/bench/load.lua",
         f"http://127.0.0.1:{port}{path}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout
    summary = json.loads(re.search(r"BENCH_JSON (\{.*\})", out).group(1))
    failed = summary["non_2xx"] + summary["rpc_errors"] + summary["socket_errors"]
    if failed:
        sys.exit(f"{failed} of {summary['requests']} requests failed: {summary}")
    return summary["requests"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", choices=["delegate", "a2a"], default="delegate")
    p.add_argument("--ids", choices=["v4", "v7"], default="v4", help="the native envelopes' request ids")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--seconds", type=int, default=5)
    args = p.parse_args()
    binary = os.environ.get("SWITCHBOARD") or os.path.join(ROOT, "target/release/switchboard")
    with tempfile.TemporaryDirectory(prefix="switchboard-log-pages.") as d:
        db, port = os.path.join(d, "switchboard.db"), free_port()
        with open(os.path.join(d, "log"), "w") as log:
            server = subprocess.Popen(
                [binary, "serve", "--config", "scripts/bench/team.toml", "--addr", f"127.0.0.1:{port}",
                 "--database-url", f"sqlite://{db}"], cwd=ROOT, stdout=log, stderr=log)
        try:
            wait_port(port, server)
            wrk(args, port, 1)  # warm-up
            reader = LogReader(db + "-wal")
            reader.start()
            time.sleep(0.3)
            served = wrk(args, port, args.seconds)
            time.sleep(0.5)  # the requests still in flight commit
            reader.stopping.set()
            reader.join()
        finally:
            server.terminate()
            server.wait()
        owner = dict((page, name) for name, page in sqlite3.connect(db).execute("SELECT name, pageno FROM dbstat"))
    by = collections.Counter()
    for page, n in reader.pages.items():
        by[owner.get(page, "(free or past the end)")] += n
    ids = f", {args.ids} request ids" if args.kind == "delegate" else ""
    print(f"{args.kind}{ids} at {args.connections} connections: {served} delegations served, "
          f"{reader.frames} log pages, {reader.frames / served:.2f} per delegation")
    for name, n in by.most_common():
        print(f"  {name:42s} {n / served:6.3f}")


if __name__ == "__main__":
    main()
