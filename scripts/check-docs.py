#!/usr/bin/env python3
"""Checks that every document the repository cites is in the repository.

Scans src/, docs/, tests/, scripts/, examples/, benches/, deploy/, .ci/,
README.md and CHANGELOG.md for references to documents and fails, naming
file:line, when one points at nothing:

- a markdown file named in text, `docs/LINEAGE.md` or `LINEAGE.md`
  (looked up beside the citing file, at the repository's root and in docs/),
  with its `#anchor` when it has one (a heading of that file);
- a link in a markdown file, `[text](target)` or `[text](#anchor)`: the
  target file, relative to the citing file, and the anchor;
- a repository path in text (`src/…`, `docs/…`, `tests/…`, `scripts/…`,
  `examples/…`, `benches/…`, `deploy/…`, `proto/…`), except in
  CHANGELOG.md, whose entries name the files of their day;
- the forms that named documents kept outside the repository: `DESIGN §N`,
  `DESIGN:` and `seeds/…` (`seeds/000`, …) or `seed 000`; cite the file in
  docs/ that says it instead.

    scripts/check-docs.py          # exit 1 and a list when a reference is broken
    scripts/check-docs.py --test   # check the checker on made-up lines

Standard library only.
"""
from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCANNED_DIRS = ["src", "docs", "tests", "scripts", "examples", "benches", "deploy", ".ci"]
SCANNED_FILES = ["README.md", "CHANGELOG.md"]
TEXT_SUFFIXES = {".rs", ".md", ".py", ".sh", ".toml", ".lua", ".yaml", ".yml", ".txt", ".conf", ""}
# Files whose contents are data, not prose that cites anything.
SKIPPED = {"Cargo.lock"}

# Documents outside the repository, in the forms the code used to cite them.
OUTSIDE = [
    (re.compile(r"\bDESIGN(?: ?§ ?\d+|:)"), "cites the design document outside the repository: cite docs/DESIGN.md#section"),
    (re.compile(r"\bseeds/\d{3}\b|\bseeds?\s+0\d\d\b"), "cites a seed document outside the repository: say what it says, or cite a file in docs/"),
]
# `NAME.md` with an optional anchor, not part of a URL.
MD = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
# A markdown link's target.
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path into one of the repository's folders.
REPO_PATH = re.compile(r"(?<![\w/.:-])((?:src|docs|tests|scripts|examples|benches|deploy|proto)/[\w./{}*-]*[\w/])")


def anchors(path: pathlib.Path, cache: dict[pathlib.Path, set[str]] = {}) -> set[str]:
    """The anchors GitHub gives the headings of a markdown file."""
    if path not in cache:
        found: set[str] = set()
        seen: dict[str, int] = {}
        fence = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = found
    return cache[path]


def resolve(name: str, citing: pathlib.Path) -> pathlib.Path | None:
    """The file `name` names from `citing`: beside it, at the root, or in docs/."""
    for base in (citing.parent, ROOT, ROOT / "docs"):
        candidate = (base / name).resolve()
        if candidate.exists() and ROOT in candidate.parents:
            return candidate
    return None


def scanned() -> list[pathlib.Path]:
    files = [ROOT / f for f in SCANNED_FILES]
    for d in SCANNED_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_file() and p.suffix in TEXT_SUFFIXES and p.name not in SKIPPED and "target" not in p.parts:
                files.append(p)
    return files


def check_line(path: pathlib.Path, line: str) -> list[str]:
    problems = []
    for pattern, why in OUTSIDE:
        for m in pattern.finditer(line):
            problems.append(f"'{m.group(0)}' {why}")
    links = set()
    if path.suffix == ".md":
        for m in LINK.finditer(line):
            target = m.group(1)
            links.add(target)
            if re.match(r"[a-z][\w+.-]*:", target):  # a URL
                continue
            name, _, anchor = target.partition("#")
            file = path if not name else resolve(name, path)
            if file is None or (not name and not anchor):
                problems.append(f"link to '{target}': no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                problems.append(f"link to '{target}': {file.relative_to(ROOT)} has no heading with anchor #{anchor}")
    for m in MD.finditer(line):
        name, anchor = m.group(1), m.group(2)
        if any(name in link for link in links):
            continue  # checked as a link
        file = resolve(name, path)
        if file is None:
            problems.append(f"'{name}' names no file in the repository")
        elif anchor and anchor not in anchors(file):
            problems.append(f"'{name}#{anchor}': {file.relative_to(ROOT)} has no heading with that anchor")
    for m in REPO_PATH.finditer(line) if path.name != "CHANGELOG.md" else ():
        name = m.group(1).rstrip(".")
        if any(c in name for c in "{}*") or name.endswith(".md") or any(name in link for link in links):
            continue
        if not (ROOT / name).exists():
            problems.append(f"'{name}' names no file or folder in the repository")
    return problems


def self_test() -> None:
    doc = ROOT / "docs" / "DESIGN.md"
    src = ROOT / "src" / "lib.rs"
    ok = [
        (src, "//! see docs/DESIGN.md#the-rails and docs/SECURITY.md"),
        (doc, "[rails](RAILS.md#cycle), [errors](#errors), [code](../src/protocol/error.rs)"),
        (src, "// A2A 1.0 §5.4, https://example.com/x.md#nowhere, README.md"),
        (src, "/// in src/pipeline/admit.rs and tests/it/"),
    ]
    for path, line in ok:
        assert check_line(path, line) == [], (line, check_line(path, line))
    bad = [
        (src, "//! The rails (DESIGN §3)", "design document"),
        (src, "/// as seeds/001 says", "seed document"),
        (src, "/// as seed 000 says", "seed document"),
        (doc, "[x](NOPE.md)", "no such file"),
        (doc, "[x](RAILS.md#no-such-heading)", "no heading"),
        (doc, "[x](#no-such-heading)", "no heading"),
        (src, "// docs/NOPE.md", "names no file"),
        (src, "// docs/RAILS.md#no-such-heading", "no heading"),
        (src, "// src/pipeline/nope.rs", "names no file or folder"),
    ]
    for path, line, why in bad:
        found = check_line(path, line)
        assert len(found) == 1 and why in found[0], (line, found)
    print("check-docs.py: ok")


def main() -> int:
    if sys.argv[1:] == ["--test"]:
        self_test()
        return 0
    problems = []
    for path in scanned():
        if path == pathlib.Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for p in check_line(path, line):
                problems.append(f"{path.relative_to(ROOT)}:{number}: {p}")
    for p in problems:
        print(p)
    if problems:
        print(f"\n{len(problems)} reference(s) to documents that are not there", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
