#!/usr/bin/env python3
"""Runs every shell command README.md shows, so its examples can't rot.

    python3 scripts/readme-commands.py           run them (CI does, in .ci/run)
    python3 scripts/readme-commands.py --list    only say what would run and what is skipped

Every fenced ```sh block of README.md is read in order and cut into commands
the way a shell reads them (a line ending in a backslash, or inside an open
quote, goes on). Each block runs in a bash of its own (`set -euo pipefail`),
with the repository as the working directory, against a fresh state: the
database is an SQLite file in a temporary directory (SWITCHBOARD_DATABASE_URL),
so nobody's own switchboard.db is touched, and the variables that could point
the commands elsewhere (SWITCHBOARD_CONFIG, SWITCHBOARD_USER, the OTLP
endpoint) are unset. A block must set every variable it reads, or find it in
PROVIDERS below.

`cargo run -- serve` is started in the background on a free port (every
`localhost:7420` of the README is rewritten to it), waited for at /healthz and
stopped at the end, also when something failed. curl gets --fail-with-body
--show-error, so an HTTP error fails the command, and a JSON answer with an
"error" is a failure too. Every command must exit 0 unless EXPECTED_STATUS says
otherwise; only the commands in SKIP are not run, each for the reason given.
The first failure is named, with its output, and the exit status is 1.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

# The fences whose contents are shell commands.
SHELL_FENCES = {"sh", "bash", "shell"}

# Commands not run here (matched on the command without its comment, spaces
# collapsed), each with the reason.
SKIP = {
    "scripts/test": "CI runs the whole test suite itself, the step of .ci/run before this one",
    "scripts/bench.sh": "the full benchmark takes about 15 minutes on 2 cores; CI runs scripts/bench.sh --smoke",
    "scripts/bench.sh --smoke": "CI runs it itself, as a step of .ci/run of its own",
    "scripts/bench.sh --replicas 3": "a benchmark of minutes; CI's scripts/bench.sh --smoke runs its parts with 2 replicas",
    "cargo bench --bench overhead": "an optimized build of minutes on 2 cores; CI runs this bench through scripts/bench.sh --smoke",
}

# Commands that run until stopped: started in the background, with the flag
# that moves them to the port chosen here, and waited for at that URL path.
BACKGROUND = {
    "cargo run -- serve": ("--addr 127.0.0.1:{port}", "/healthz"),
}

# Commands whose exit status is not 0: command -> (status, reason). None today.
EXPECTED_STATUS: dict[str, tuple[int, str]] = {}

# Variables the README leaves to the reader: when a block reads one without
# setting it, it is set first the way the README tells a reader to get it.
PROVIDERS = {
    # a user's bearer token: `switchboard token --user U` (serve also prints
    # one for local-user at its first start)
    "USER_TOKEN": "cargo run -q -- token --user local-user",
}

# The port the README's commands talk to; rewritten to the server's.
README_PORT = 7420
# Bounds: the server's start (the binary is built beforehand), one command.
SERVER_START_S = 60
COMMAND_S = 120
# and all of them together, after the build
TOTAL_S = 300
# How much of an output is printed for a command that passed.
EXCERPT_CHARS = 300


@dataclass
class Command:
    block: int  # 1-based, in README order
    line: int  # README line of its first line
    text: str  # as the README shows it
    code: str  # without its trailing comment
    kind: str = "run"  # run, skip, background
    reason: str = ""

    @property
    def key(self) -> str:
        return " ".join(self.code.replace("\\\n", " ").split())


def scan(text: str) -> tuple[bool, str]:
    """Whether `text` is a whole shell command (no open quote, no trailing
    backslash), and its text before a trailing `#` comment."""
    quote = None
    word_start = True
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\":
            if i + 1 >= len(text):
                return False, text
            i += 2
            word_start = False
            continue
        elif c in "'\"":
            quote = c
        elif c == "#" and word_start:
            return True, text[:i].rstrip()
        word_start = c in " \t\n;|&()"
        i += 1
    return quote is None, text.rstrip()


def extract(readme: Path) -> list[Command]:
    """Every command of every shell block, in order, classified."""
    commands: list[Command] = []
    lines = readme.read_text(encoding="utf-8").splitlines()
    fence = None  # the open fence's backticks, if inside a block
    in_shell = False
    block = 0
    pending: list[str] = []
    start = 0
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,})\s*([\w+-]*)", stripped)
            if m:
                fence, in_shell = m.group(1), m.group(2).lower() in SHELL_FENCES
                if in_shell:
                    block += 1
            continue
        if stripped.startswith(fence) and stripped.strip("`") == "":
            if pending:
                sys.exit(f"README.md line {start}: a command is not finished when its block ends (open quote?)")
            fence = None
            continue
        if not in_shell:
            continue
        if not pending:
            start = n
        pending.append(line)
        text = "\n".join(pending)
        complete, code = scan(text)
        if not complete:
            continue
        pending = []
        if code.strip():
            commands.append(Command(block, start, text.strip(), code.strip()))
    if fence is not None:
        sys.exit("README.md: a fenced block is never closed")
    for c in commands:
        if c.key in SKIP:
            c.kind, c.reason = "skip", SKIP[c.key]
        elif c.key in BACKGROUND:
            c.kind, c.reason = "background", "runs until stopped: started in the background, stopped at the end"
    return commands


def as_run(code: str, port: int) -> str:
    """The command as it runs here: the server's port; curl fails on HTTP errors."""
    code = re.sub(rf"\b(localhost|127\.0\.0\.1):{README_PORT}\b", rf"\g<1>:{port}", code)
    return re.sub(r"(^|[\s;&|(])curl(?=\s)", r"\1curl --fail-with-body --show-error", code)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text)} chars)"
    return "\n".join("     " + line for line in text.splitlines()) or "     (no output)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def stop(proc: subprocess.Popen, grace_s: float = 15) -> None:
    """Stops a process started here in a session of its own, with its children."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Failure(Exception):
    pass


class Runner:
    def __init__(self, port: int, tmp: Path):
        self.port = port
        self.tmp = tmp
        self.env = dict(os.environ)
        for var in ("SWITCHBOARD_CONFIG", "SWITCHBOARD_USER", "OTEL_EXPORTER_OTLP_ENDPOINT", *PROVIDERS):
            self.env.pop(var, None)
        self.env["SWITCHBOARD_DATABASE_URL"] = f"sqlite://{tmp}/switchboard.db"
        # the server is local: no proxy in between (curl and urllib read these)
        for var in ("no_proxy", "NO_PROXY"):
            self.env[var] = ",".join(filter(None, [self.env.get(var), "127.0.0.1", "localhost"]))
        self.server: subprocess.Popen | None = None
        self.server_log = tmp / "server.log"
        self.ran = 0
        self.deadline = time.monotonic() + TOTAL_S
        self.segments = 0

    # --- the server -----------------------------------------------------------
    def start(self, c: Command) -> None:
        flag, health = BACKGROUND[c.key]
        line = as_run(c.code, self.port) + " " + flag.format(port=self.port)
        print(f"$ {line} &", flush=True)
        if port_taken(self.port):
            raise Failure(f"port {self.port} is taken: stop what listens there or pick another with --port")
        t0 = time.monotonic()
        with open(self.server_log, "wb") as log:
            self.server = subprocess.Popen(
                ["bash", "-c", "exec " + line],
                cwd=REPO, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{self.port}{health}"
        while True:
            if self.server.poll() is not None:
                raise Failure(f"{c.key} exited with status {self.server.returncode} before {url} answered\n"
                              + excerpt(self.server_log.read_text(errors="replace"), 2000))
            try:
                with NO_PROXY_OPENER.open(url, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() - t0 > SERVER_START_S:
                raise Failure(f"{url} did not answer within {SERVER_START_S} s of starting {c.key}\n"
                              + excerpt(self.server_log.read_text(errors="replace"), 2000))
            time.sleep(0.2)
        first = self.server_log.read_text(errors="replace").strip().splitlines()
        said = next((ln for ln in first if "listening" in ln), "")
        print(f"   {url} answers after {time.monotonic() - t0:.1f} s ({said.strip()})", flush=True)

    def stop(self) -> None:
        if self.server is not None:
            stop(self.server)
            print(f"== stopped the server (status {self.server.returncode})", flush=True)
            self.server = None

    # --- a run of commands in one bash ----------------------------------------
    def run(self, cmds: list[Command]) -> None:
        """Runs commands of one block in one bash, one after the other,
        recording each one's output and status; stops at the first wrong status."""
        self.segments += 1
        d = self.tmp / f"segment-{self.segments}"
        d.mkdir()
        block_text = "\n".join(c.code for c in cmds)
        steps: list[tuple[str, str, Command | None]] = []  # (shown, run, command)
        for var, provider in PROVIDERS.items():
            reads = re.search(rf"\$\{{?{var}\b", block_text)
            sets = re.search(rf"(^|[\s;&|(]){var}=", block_text)
            if reads and not sets:
                steps.append((f"{var}=$({provider})", f"{var}=$({provider})", None))
        for c in cmds:
            steps.append((c.text, as_run(c.code, self.port), c))
        script = ["set -euo pipefail"]
        for i, (_, code, c) in enumerate(steps):
            expected = EXPECTED_STATUS.get(c.key, (0, ""))[0] if c else 0
            script += [
                f': > "{d}/{i}.started"',
                "__rc=0",
                # the newline before } ends a trailing comment; `||` records the status
                f'{{ {code}\n}} > "{d}/{i}.out" 2> "{d}/{i}.err" < /dev/null || __rc=$?',
                f'echo "$__rc" > "{d}/{i}.rc"',
                f'[ "$__rc" = {expected} ] || exit 0',
            ]
        (d / "script.sh").write_text("\n".join(script) + "\n")
        proc = subprocess.Popen(["bash", str(d / "script.sh")], cwd=REPO, env=self.env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        current, since = -1, time.monotonic()
        try:
            while proc.poll() is None:
                started = max((i for i in range(len(steps)) if (d / f"{i}.started").exists()), default=-1)
                if started != current:
                    current, since = started, time.monotonic()
                elif time.monotonic() - since > COMMAND_S or time.monotonic() > self.deadline:
                    stop(proc, grace_s=5)
                    shown, _, c = steps[current] if current >= 0 else ("(the block's shell)", "", None)
                    where = f"README.md line {c.line}" if c else "README.md"
                    raise Failure(f"{where}: still running after {time.monotonic() - since:.0f} s (bounds: "
                                  f"{COMMAND_S} s a command, {TOTAL_S} s in all): {shown}")
                time.sleep(0.1)
        finally:
            stop(proc, grace_s=5)
        for i, (shown, code, c) in enumerate(steps):
            if not (d / f"{i}.started").exists():
                break
            where = f"README.md line {c.line}" if c else "provided (PROVIDERS)"
            out = (d / f"{i}.out").read_text(errors="replace") if (d / f"{i}.out").exists() else ""
            err = (d / f"{i}.err").read_text(errors="replace") if (d / f"{i}.err").exists() else ""
            rc_file = d / f"{i}.rc"
            # no status recorded: the shell itself stopped there (set -u, …)
            rc = int(rc_file.read_text()) if rc_file.exists() else proc.returncode
            expected = EXPECTED_STATUS.get(c.key, (0, ""))[0] if c else 0
            print(f"$ {shown}" + ("" if code == (c.code if c else shown) else f"\n  (runs as: {code})"), flush=True)
            self.ran += 1
            problem = None
            if rc != expected:
                problem = f"exit status {rc}, expected {expected}"
            elif re.search(r"(^|[\s;&|(])curl\s", code):
                problem = json_error(out)
            if problem:
                raise Failure(f"{where}: {shown}\n  {problem}\n  stdout:\n{excerpt(out, 2000)}\n"
                              f"  stderr:\n{excerpt(err, 2000)}")
            print(f"   ok ({where}):\n{excerpt(out if out.strip() else '')}", flush=True)


def json_error(body: str) -> str | None:
    """Why a JSON answer is an error, if it is one."""
    try:
        value = json.loads(body)
    except ValueError:
        return None  # not JSON: the HTTP status alone counts (--fail-with-body)
    if isinstance(value, dict) and value.get("error") is not None:
        return "the answer carries an \"error\""
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print what would run and what is skipped; run nothing")
    ap.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    args = ap.parse_args()

    commands = extract(README)
    counts = {k: sum(c.kind == k for c in commands) for k in ("run", "background", "skip")}
    blocks = max((c.block for c in commands), default=0)
    print(f"== README.md: {blocks} shell blocks, {len(commands)} commands: {counts['run']} to run, "
          f"{counts['background']} in the background, {counts['skip']} skipped", flush=True)
    if args.list:
        for c in commands:
            label = {"run": "run ", "background": "bg  ", "skip": "skip"}[c.kind]
            text = c.text.replace("\n", "\n" + " " * 16)
            print(f"{label} line {c.line:>3}: {text}" + (f"\n                ({c.reason})" if c.reason else ""))
        print(f"(curl runs with --fail-with-body --show-error, and localhost:{README_PORT} becomes the server's port)")
        return 0

    t0 = time.monotonic()
    print("== building the binary first (cargo build --bin switchboard), so the server's start is timed alone",
          flush=True)
    build = subprocess.run(["cargo", "build", "--quiet", "--bin", "switchboard"], cwd=REPO)
    if build.returncode != 0:
        print("FAILED: cargo build --bin switchboard", file=sys.stderr)
        return 1
    built = time.monotonic()
    # SIGTERM (CI's timeout) stops the server too, through the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="switchboard-readme-") as tmp:
        runner = Runner(args.port or free_port(), Path(tmp))
        print(f"== fresh state: {runner.env['SWITCHBOARD_DATABASE_URL']}; server port {runner.port}", flush=True)
        try:
            i = 0
            while i < len(commands):
                c = commands[i]
                if c.kind == "skip":
                    print(f"-- skipped (README.md line {c.line}): {c.key}\n   ({c.reason})", flush=True)
                    i += 1
                elif c.kind == "background":
                    runner.start(c)
                    i += 1
                else:  # the run of commands of this block up to the next skipped or background one
                    j = i
                    while j < len(commands) and commands[j].kind == "run" and commands[j].block == c.block:
                        j += 1
                    runner.run(commands[i:j])
                    i = j
        except Failure as e:
            print(f"\nFAILED: {e}", file=sys.stderr, flush=True)
            if runner.server is not None:
                tail = runner.server_log.read_text(errors="replace").splitlines()[-15:]
                print("the server's log (last lines):\n" + excerpt("\n".join(tail), 2000), file=sys.stderr)
            return 1
        finally:
            runner.stop()
    print(f"== ok: {runner.ran} commands ran ({counts['background']} more in the background), "
          f"{counts['skip']} skipped, in {time.monotonic() - built:.0f} s (and {built - t0:.0f} s of build before)",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
