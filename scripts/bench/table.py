"""Renders target/bench/results.jsonl (written by scripts/bench.sh) as the
table of docs/PERFORMANCE.md, with the ratios the performance goals name.
Goals are reported, not asserted: a run on a shared machine is evidence, not
a verdict.

python3 scripts/bench/table.py target/bench/results.jsonl [--check]

--check (the smoke run): exits 1 when a part is missing or a load saw
errors, so the benchmark cannot rot unnoticed. It checks that the parts
worked, never how fast they were.
"""

import json
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def us(v):
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v / 1000:.2f} ms"
    return f"{v:.1f} µs"


def mib(kib):
    return "-" if not kib else f"{kib / 1024:.1f} MB"


def ratio(a, b):
    return None if not a or not b else a / b


def verdict(value, goal, higher=True):
    if value is None:
        return "not measured"
    ok = value >= goal if higher else value <= goal
    return "meets the goal" if ok else "short of the goal"


# The HTTP servers, in the table's order: (name in results.jsonl, label).
SERVERS = [
    ("switchboard-http", "switchboard POST /v1/delegate (SQLite, audit)"),
    ("switchboard-memory", "  the same, in-memory store (not durable)"),
    ("bare-axum", "bare axum hello-world (the limit)"),
    ("switchboard-a2a", "switchboard A2A SendMessage (SQLite, audit)"),
    ("a2a-sdk", "a2a-sdk Python echo server (uvicorn)"),
]


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    rows = load(args[0] if args else "target/bench/results.jsonl")
    machine = next((r for r in rows if r.get("section") == "machine"), {})
    inproc = {r["name"]: r for r in rows if r.get("section") == "inprocess"}
    memory = next((r for r in rows if r.get("section") == "memory"), None)
    hop = next((r for r in rows if r.get("section") == "langgraph"), None)
    http = {}
    for r in rows:
        if r.get("section") == "http":
            http[(r["name"], r["connections"])] = r
    levels = sorted({c for (_, c) in http})
    hops = {(r["name"], r["connections"]): r for r in rows if r.get("section") == "hop"}
    hop_levels = sorted({c for (_, c) in hops})

    out = []
    p = out.append
    p(f"machine: {machine.get('cores', '?')} cores, {machine.get('cpu', '?')}; {machine.get('rustc', '')}; "
      f"wrk {machine.get('wrk', '?')}; Python {machine.get('python', '?')}, a2a-sdk {machine.get('a2a_sdk', '?')}, "
      f"uvicorn {machine.get('uvicorn', '?')}, langgraph {hop.get('langgraph', '?') if hop else '?'}"
      + ("  [SMOKE RUN: short, not for comparison]" if machine.get("smoke") else ""))
    p("")
    p("In process (one thread of work per call, zero-work agents)")
    p(f"  {'case':<44} {'p50':>10} {'p99':>10} {'per second':>12}")
    for key, label in [("direct", "agent called directly (no rails)"), ("single", "one delegation, full pipeline"),
                       ("chain", "2-step chain (3 delegations)"), ("fanout", "3-way fan-out (4 delegations)")]:
        r = inproc.get(key)
        if r:
            p(f"  {label:<44} {us(r['p50_us']):>10} {us(r['p99_us']):>10} {r['per_sec']:>12.0f}")
    if hop:
        g, m = hop["graph"], hop["models"]
        p(f"  {'LangGraph supervisor -> worker hop':<44} {us(g['p50_us']):>10} {us(g['p99_us']):>10} {g['per_sec']:>12.0f}")
        p(f"  {'  of which the two fake model calls':<44} {us(m['p50_us']):>10} {us(m['p99_us']):>10} {m['per_sec']:>12.0f}")
    p("")
    for c in levels:
        p(f"Over HTTP, {c} connection{'s' if c > 1 else ''} (wrk; peak RSS of the server)")
        p(f"  {'server':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'peak RSS':>10} {'errors':>7}")
        for name, label in SERVERS:
            r = http.get((name, c))
            if r:
                errors = r.get("non_2xx", 0) + r.get("rpc_errors", 0) + r.get("socket_errors", 0)
                p(f"  {label:<44} {r['rps']:>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} "
                  f"{mib(r.get('peak_rss_kib')):>10} {errors:>7}")
        p("")
    for c in hop_levels:
        p(f"A hop between two Switchboards over HTTP, {c} connection{'s' if c > 1 else ''} (in-memory stores)")
        p(f"  {'through A to its agent served by B':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'errors':>7}")
        for name, label in [("hop-plain", "without lineage"), ("hop-lineage", "with signed lineage (sign + verify)")]:
            r = hops.get((name, c))
            if r:
                errors = r.get("non_2xx", 0) + r.get("socket_errors", 0)
                p(f"  {label:<44} {r['rps']:>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} {errors:>7}")
        a, b = hops.get(("hop-lineage", c)), hops.get(("hop-plain", c))
        if a and b:
            p(f"  lineage adds {us(a['p50_us'] - b['p50_us'])} p50 per hop "
              f"(goal < 50 us: {verdict((a['p50_us'] - b['p50_us']), 50, higher=False)})")
        p("")
    if memory:
        p(f"Memory (in process, durable SQLite store)")
        p(f"  idle after warm-up {mib(memory['idle_kib'])}; {memory['in_flight']} delegations in flight "
          f"{mib(memory['in_flight_kib'])}; after {memory['total'] // 10} more {mib(memory['after_tenth_kib'])}, "
          f"after {memory['total']} more {mib(memory['after_total_kib'])}; peak {mib(memory['peak_kib'])}")
        p("")

    p("Goals (reported, not asserted)")
    single = inproc.get("single")
    if single and hop:
        r = ratio(hop["graph"]["p50_us"], single["p50_us"])
        p(f"  in-process hop vs LangGraph hop (p50): {r:.0f}x faster; goal >= 100x: {verdict(r, 100)}")
    top = levels[-1] if levels else None
    for ours, label in [("switchboard-http", "native"), ("switchboard-a2a", "A2A")]:
        for c in levels:
            a, b = http.get((ours, c)), http.get(("a2a-sdk", c))
            if a and b:
                t = ratio(a["rps"], b["rps"])
                q = ratio(a["p99_us"], b["p99_us"])
                p(f"  {label} vs a2a-sdk at {c}: throughput {t:.1f}x (goal >= 10x: {verdict(t, 10)}), "
                  f"p99 {q:.2f} of it (goal <= 0.10: {verdict(q, 0.10, higher=False)})")
    # the goal is for the durable server; the in-memory one shows the bound without durability
    for ours, label, goal in [("switchboard-http", "switchboard", True),
                              ("switchboard-memory", "the same with the in-memory store", False)]:
        for c in levels:
            a, b = http.get((ours, c)), http.get(("bare-axum", c))
            if a and b:
                t = ratio(a["rps"], b["rps"])
                judged = f" (goal >= 50%: {verdict(t, 0.5)})" if goal else ""
                p(f"  {label} vs bare axum at {c}: {t * 100:.0f}% of its throughput{judged}; "
                  f"added p99 {us(a['p99_us'] - b['p99_us'])}")
    if top is not None:
        a, b = http.get(("switchboard-http", top)), http.get(("bare-axum", top))
        if a and b:
            added = (a["p99_us"] - b["p99_us"]) / 1000
            p(f"  added p99 at {top} connections: {added:.2f} ms (goal <= 1 ms: {verdict(added, 1.0, higher=False)})")
    if memory:
        grow = (memory["after_total_kib"] - memory["after_tenth_kib"]) / 1024
        p(f"  RSS with {memory['in_flight']} in flight: {mib(memory['in_flight_kib'])} "
          f"(goal <= 64 MB: {verdict(memory['in_flight_kib'] / 1024, 64, higher=False)}); "
          f"growth over the last {memory['total'] - memory['total'] // 10} delegations: {grow:+.1f} MB")
    print("\n".join(out))
    if "--check" in sys.argv:
        problems = []
        for key in ["direct", "single", "chain", "fanout"]:
            if key not in inproc:
                problems.append(f"in-process case '{key}' is missing")
        if hop is None:
            problems.append("the LangGraph hop is missing")
        if memory is None:
            problems.append("the memory run is missing")
        for c in levels:
            for name, _ in SERVERS:
                r = http.get((name, c))
                if r is None:
                    problems.append(f"{name} at {c} connections is missing")
                elif r["requests"] == 0 or r.get("non_2xx", 0) + r.get("rpc_errors", 0) + r.get("socket_errors", 0):
                    problems.append(f"{name} at {c} connections: {r}")
        if not levels:
            problems.append("no HTTP load ran")
        for c in hop_levels or [None]:
            for name in ["hop-plain", "hop-lineage"]:
                r = hops.get((name, c))
                if r is None:
                    problems.append(f"{name} at {c} connections is missing")
                elif r["requests"] == 0 or r.get("non_2xx", 0) + r.get("socket_errors", 0):
                    problems.append(f"{name} at {c} connections: {r}")
        for p_ in problems:
            print("bench check: " + p_, file=sys.stderr)
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
