#!/usr/bin/env python3
"""Checks that the imports between Switchboard's top-level modules point down.

Every top-level module of src/ has a layer (below). A module may use modules
of its own layer or of lower layers, never of a higher one, and the
top-level modules may not import each other in a circle. Every `crate::…`,
`super::…` and `self::…` path in the code (comments excluded, tests
included) is resolved to the top-level module it names.

    scripts/check-layers.py            # exit 1 and a list when a rule breaks
    scripts/check-layers.py --graph    # also print who imports whom

It also checks the one door (docs/SECURITY.md): the surfaces (the top
layers: a2a, mcp, queue, server, cli) enter the runtime only through
`Runtime::enter`, never through a lower entry point (`ask`, `delegate`, the
pipeline's dispatch), so that every rule that derives trust from a call's
door, caller and request applies to all of them.

docs/ARCHITECTURE.md explains the layers.
"""
import pathlib
import re
import sys

# lower number = lower layer
LAYERS = {
    "protocol": (0, "ground: wire types only"),
    "util": (1, "base"),
    "config": (1, "base"),
    "redact": (2, "bottom: building blocks"),
    "verify": (2, "bottom: building blocks"),
    "store": (2, "bottom: building blocks"),
    "resilience": (2, "bottom: building blocks"),
    "telemetry": (2, "bottom: building blocks"),
    "auth": (3, "bottom: rules"),
    "rails": (3, "bottom: rules"),
    "lineage": (3, "bottom: rules"),
    "route": (3, "bottom: rules"),
    "agent": (4, "bottom: agents and backends"),
    "orchestrate": (5, "middle: orchestration and the built-in team"),
    "team": (5, "middle: orchestration and the built-in team"),
    "runtime": (6, "middle: the runtime and its services"),
    "pipeline": (7, "middle: the pipeline (above the runtime)"),
    "testing": (8, "top: what tests are built from (feature test-util)"),
    "a2a": (8, "top: protocol services"),
    "mcp": (8, "top: protocol services"),
    "queue": (8, "top: protocol services"),
    "server": (9, "top: HTTP"),
    "cli": (10, "top: command line"),
}
ROOT_FILES = {"lib.rs", "main.rs"}

# The surfaces, and the runtime's entry points below the one door that they may not call.
SURFACES = {"a2a", "mcp", "queue", "server", "cli"}
LOWER_ENTRY = re.compile(
    r"(?:\.|Runtime::)(ask|consult|delegate|ask_response|delegate_from|delegate_from_ending|"
    r"dispatch|dispatch_top|dispatch_step|record_refusal|turn)\s*\("
)

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")


def module_path(src: pathlib.Path, file: pathlib.Path) -> list[str]:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def groups_after(text: str, start: int) -> list[str]:
    """The first segments inside a `{…}` group starting at text[start] == '{'."""
    depth, i, item, items = 0, start, "", []
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                items.append(item)
                break
        if depth == 1 and c == ",":
            items.append(item)
            item = ""
        elif depth >= 1:
            item += c
        i += 1
    return [re.split(r"::|\s|\{", s.strip())[0] for s in items if s.strip()]


def targets(src: pathlib.Path, file: pathlib.Path) -> set[str]:
    """The top-level modules `file` refers to."""
    here = module_path(src, file)
    text = strip_comments(file.read_text())
    found = set()
    for m in PATH.finditer(text):
        kind, rest = m.group(1), m.group(2)
        segments = [s for s in rest.split("::") if s]
        if kind == "crate":
            base = []
        elif kind == "self":
            base = list(here)
        else:
            base = here[:-1]
            while segments and segments[0] == "super":
                segments.pop(0)
                base = base[:-1]
        if segments and segments[0] == "{":
            segments = []
        absolute = base + segments
        if absolute:
            found.add(absolute[0])
        elif rest.endswith("{"):
            found.update(groups_after(text, m.end() - 1))
    return found


def main() -> int:
    repo = pathlib.Path(__file__).resolve().parent.parent
    src = repo / "src"
    edges: dict[str, set[str]] = {}
    problems = []
    for file in sorted(src.rglob("*.rs")):
        rel = file.relative_to(src)
        if len(rel.parts) == 1 and rel.name in ROOT_FILES:
            continue
        top = module_path(src, file)[0]
        if top not in LAYERS:
            problems.append(f"src/{rel}: top-level module '{top}' has no layer in scripts/check-layers.py")
            continue
        if top in SURFACES:
            for m in LOWER_ENTRY.finditer(strip_comments(file.read_text())):
                problems.append(
                    f"src/{rel}: a surface calls `{m.group(1)}(…)`: surfaces enter the runtime only through "
                    "Runtime::enter (the one door, docs/SECURITY.md)"
                )
        for t in sorted(targets(src, file)):
            if t == top or t not in LAYERS:
                continue
            edges.setdefault(top, set()).add(t)
            if LAYERS[t][0] > LAYERS[top][0]:
                problems.append(
                    f"src/{rel}: '{top}' ({LAYERS[top][1]}) uses '{t}' ({LAYERS[t][1]}), a higher layer"
                )
    # circles between top-level modules
    seen, stack, on_stack = set(), [], set()

    def visit(n: str) -> None:
        seen.add(n)
        stack.append(n)
        on_stack.add(n)
        for m in sorted(edges.get(n, ())):
            if m in on_stack:
                circle = stack[stack.index(m):] + [m]
                problems.append("import circle: " + " -> ".join(circle))
            elif m not in seen:
                visit(m)
        stack.pop()
        on_stack.discard(n)

    for n in sorted(edges):
        if n not in seen:
            visit(n)
    if "--graph" in sys.argv:
        for n in sorted(edges, key=lambda n: (-LAYERS[n][0], n)):
            print(f"{n:12} -> {', '.join(sorted(edges[n]))}")
    if problems:
        print("\n".join(problems))
        print(f"\n{len(problems)} problem(s): imports that break the layer order, or surfaces that skip the one door (scripts/check-layers.py, docs/ARCHITECTURE.md)")
        return 1
    print(f"layers: {len(edges)} modules, every import points down, no circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
