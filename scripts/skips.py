#!/usr/bin/env python3
"""Summarizes the tests that skipped part of their work (scripts/test).

    python3 scripts/skips.py FILE      print the summary of FILE
    python3 scripts/skips.py --test    check the summarizer on a sample

FILE holds one line per skip, four tab-separated fields: the test's name,
what it skipped, why, and how to make it run (tests/it/support.rs `skip`
writes them). Skips of the same thing with the same remedy are one entry:
how many tests, which, the first reason (and how many others there were),
the remedy, and the command that runs those tests again. Standard library
only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

# How many test names an entry lists before "and N more".
SHOWN = 3


@dataclass
class Entry:
    what: str
    how: str
    tests: list[str] = field(default_factory=list)
    whys: list[str] = field(default_factory=list)


def parse(text: str) -> list[tuple[str, str, str, str]]:
    """The skips in `text`; a line without four fields is ignored."""
    rows = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and all(p.strip() for p in parts):
            rows.append(tuple(p.strip() for p in parts))
    return rows


def rerun(tests: list[str]) -> str:
    """The command that runs `tests` again: their modules as filters."""
    modules = sorted({t.split("::")[0] + "::" if "::" in t else t for t in tests})
    return "scripts/test --test it -- " + " ".join(modules)


def summarize(text: str) -> str:
    """The summary of the skips in `text`."""
    entries: dict[tuple[str, str], Entry] = {}
    for test, what, why, how in parse(text):
        e = entries.setdefault((what, how), Entry(what, how))
        if test not in e.tests:
            e.tests.append(test)
        if why not in e.whys:
            e.whys.append(why)
    if not entries:
        return "== skips: none (no test skipped a part of its work)"
    total = len({t for e in entries.values() for t in e.tests})
    out = [f"== skips: {total} test{'s' if total != 1 else ''} passed without running all of {'their' if total != 1 else 'its'} parts"]
    for e in sorted(entries.values(), key=lambda e: (-len(e.tests), e.what)):
        names = sorted(e.tests)
        shown = ", ".join(names[:SHOWN]) + (f", and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
        n = len(names)
        out.append(f"- {e.what}: {n} test{'s' if n != 1 else ''} ({shown})")
        others = len(e.whys) - 1
        out.append(f"    why: {e.whys[0]}" + (f" (and {others} other reason{'s' if others != 1 else ''})" if others else ""))
        out.append(f"    to run it: {e.how}")
        out.append(f"    then: {rerun(names)}")
    out.append("Under CI=true each of these skips fails its test instead.")
    return "\n".join(out)


def self_test() -> None:
    sample = "\n".join([
        "db::a\tthe PostgreSQL half\tPostgreSQL at X cannot be reached (refused)\tstart PostgreSQL",
        "store::b\tthe PostgreSQL half\tPostgreSQL at X cannot be reached (timed out)\tstart PostgreSQL",
        "store::b\tthe PostgreSQL half\tPostgreSQL at X cannot be reached (refused)\tstart PostgreSQL",
        "queue::c\tthe queue test\tno NATS answers\tstart nats-server",
        "a torn line",
        "",
    ])
    got = summarize(sample)
    assert got.splitlines()[0] == "== skips: 3 tests passed without running all of their parts", got
    assert "- the PostgreSQL half: 2 tests (db::a, store::b)" in got, got
    assert "why: PostgreSQL at X cannot be reached (refused) (and 1 other reason)" in got, got
    assert "then: scripts/test --test it -- db:: store::" in got, got
    assert "- the queue test: 1 test (queue::c)" in got, got
    assert got.index("PostgreSQL half") < got.index("queue test"), "the largest group first"
    many = "\n".join(f"m::t{i}\tx\ty\tz" for i in range(5))
    assert "(m::t0, m::t1, m::t2, and 2 more)" in summarize(many), summarize(many)
    assert summarize("").startswith("== skips: none"), summarize("")
    print("skips.py: ok")


def main() -> int:
    if sys.argv[1:] == ["--test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(sys.argv[1])
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    print(summarize(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
