"""Renders target/bench/results.jsonl (written by scripts/bench.sh) as the
table of docs/PERFORMANCE.md, then issue 20's table: each figure beside its
goal, with a check mark or a cross. Goals are reported, not asserted: a run on
a shared machine is evidence, not a verdict.

python3 scripts/bench/table.py target/bench/results.jsonl [--check | --scale]

--scale (scripts/bench.sh --replicas N): the hop and scale-out tables only.

--check (the smoke run): exits 1 when a part is missing or a load saw
errors, so the benchmark cannot rot unnoticed. It checks that the parts
worked, never how fast they were. (LiteLLM runs in the full run only, so
--check does not ask for it.)
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
    ("switchboard-pg", "  the same, PostgreSQL store (audit)"),
    ("switchboard-memory", "  the same, in-memory store (not durable)"),
    ("bare-axum", "bare axum hello-world (the limit)"),
    ("switchboard-a2a", "switchboard A2A SendMessage (SQLite, audit)"),
    ("a2a-sdk", "a2a-sdk Python echo server (uvicorn)"),
]


GATEWAYS = [
    ("echo-alone", "a2a-sdk echo agent alone (uvicorn)"),
    ("switchboard-gateway", "switchboard A2A -> a2a backend (SQLite)"),
    ("litellm-gateway", "LiteLLM proxy /a2a/{agent} -> echo"),
]

MEMORY_HTTP = [
    ("switchboard-http", "/v1/delegate, SQLite"),
    ("switchboard-pg", "/v1/delegate, PostgreSQL"),
    ("switchboard-a2a", "A2A SendMessage, SQLite"),
]


def served(r):
    """Answers per second that were answers: 2xx without a JSON-RPC error.
    A server turning requests away (503 over its admission limit) answers
    fast; those do not count as throughput."""
    if not r.get("seconds"):
        return r.get("rps", 0)
    ok = r["requests"] - r.get("non_2xx", 0) - r.get("rpc_errors", 0)
    return max(ok, 0) / r["seconds"]


def errors_of(r):
    return r.get("non_2xx", 0) + r.get("rpc_errors", 0) + r.get("socket_errors", 0)


def mark(value, goal, higher=True):
    """A figure's check mark against its goal: a check or a cross."""
    if value is None:
        return ""
    return " ✓" if (value >= goal if higher else value <= goal) else " ✗"


def warm(r):
    """The samples from the end of the warm-up (the first tenth of the delegations) on."""
    rest = [s for s in r["samples"] if s[0] >= r["total"] / 10]
    return rest if len(rest) >= 2 else r["samples"][-2:]


def drift(r):
    """The largest move of RSS after the warm-up, as a fraction of RSS at its end."""
    samples = warm(r)
    base = samples[0][1] if samples else 0
    if not base or len(samples) < 2:
        return None
    return max(abs(kib - base) for _, kib in samples[1:]) / base


def issue_table(http, levels, gateway, mem_http, inproc, hop, hops, smoke):
    """Issue 20's table: one row per goal, the connection levels as columns, a
    check mark or a cross in each cell a goal names, the goal in the last column."""
    cols = [1, 64, 1000]
    rows = []

    def rps(name, c):
        r = http.get((name, c))
        return served(r) if r else None

    def pct(name, c, goal=None):
        t = ratio(rps(name, c), rps("bare-axum", c))
        if t is None:
            return "-"
        return f"{t * 100:.0f}%" + (mark(t, goal) if goal is not None else "")

    rows.append(["durable `/v1/delegate` (SQLite, audit fsynced) vs bare axum",
                 pct("switchboard-http", 1, 0.30), pct("switchboard-http", 64, 0.50),
                 pct("switchboard-http", 1000, 0.50), "≥ 30% at c=1, ≥ 50% at c=64 and c=1000"])
    rows.append(["PostgreSQL as the store vs bare axum",
                 pct("switchboard-pg", 1), pct("switchboard-pg", 64, 0.30), pct("switchboard-pg", 1000),
                 "≥ 30% at c=64"])
    rows.append(["in-memory store (not durable) vs bare axum",
                 pct("switchboard-memory", 1), pct("switchboard-memory", 64, 0.80), pct("switchboard-memory", 1000),
                 "≥ 80% at c=64"])

    def added_p99(name, c, goal_ms=None):
        a, b = http.get((name, c)), http.get(("bare-axum", c))
        if not a or not b:
            return "-"
        ms = (a["p99_us"] - b["p99_us"]) / 1000
        return f"{ms:.2f} ms" + (mark(ms, goal_ms, higher=False) if goal_ms is not None else "")

    rows.append(["added p99 over bare axum (durable `/v1/delegate`)", added_p99("switchboard-http", 1),
                 added_p99("switchboard-http", 64), added_p99("switchboard-http", 1000, 1.0),
                 "≤ 1 ms at c=1000"])

    def a2a_rss(c, goal=None):
        r = http.get(("switchboard-a2a", c))
        if not r or not r.get("peak_rss_kib"):
            return "-"
        m = r["peak_rss_kib"] / 1024
        return f"{m:.0f} MB" + (mark(m, goal, higher=False) if goal is not None else "")

    rows.append(["A2A `SendMessage`: peak RSS", a2a_rss(1), a2a_rss(64), a2a_rss(1000, 64), "≤ 64 MB at c=1000"])

    def a2a_vs_native(c, goal=None):
        t = ratio(rps("switchboard-a2a", c), rps("switchboard-http", c))
        return "-" if t is None else f"{t * 100:.0f}%" + (mark(t, goal) if goal is not None else "")

    rows.append(["A2A `SendMessage` throughput vs `/v1/delegate`", a2a_vs_native(1), a2a_vs_native(64),
                 a2a_vs_native(1000, 0.5), "≥ 50% at c=1000"])

    def vs_sdk(name, c):
        t = ratio(rps(name, c), rps("a2a-sdk", c))
        return "-" if t is None else f"{t:.1f}×"

    rows.append(["durable `/v1/delegate` vs the a2a-sdk Python server", vs_sdk("switchboard-http", 1),
                 vs_sdk("switchboard-http", 64), vs_sdk("switchboard-http", 1000), "(for context)"])

    out = ["| path | c=1 | c=64 | c=1000 | goal |", "|---|---|---|---|---|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")

    # the gateways, at one connection level of their own
    echo, ours, lite = (gateway.get(n) for n, _ in GATEWAYS)
    c = next(iter(gateway.values()))["connections"] if gateway else "?"

    def fig(r):
        return "-" if not r else f"{served(r):.0f} req/s, p99 {us(r['p99_us'])}"

    out.append("")
    out.append(f"| A2A gateway in front of the same echo agent, c={c} | measured | goal |")
    out.append("|---|---|---|")
    out.append(f"| the a2a-sdk echo agent alone | {fig(echo)} | (the bound behind both gateways) |")
    out.append(f"| LiteLLM proxy `/a2a/{{agent}}` | {fig(lite) if lite else ('not run (smoke)' if smoke else '-')} "
               f"| (issue 20: 36 req/s, p99 822 ms) |")
    out.append(f"| Switchboard A2A, our a2a backend (SQLite) | {fig(ours)} | |")
    t = ratio(ours and served(ours), lite and served(lite))
    out.append(f"| Switchboard vs LiteLLM, throughput | {'-' if t is None else f'{t:.1f}×' + mark(t, 20)} "
               f"| ≥ 20× |")
    if ours and lite:
        q = ours["p99_us"] / lite["p99_us"] if lite["p99_us"] else None
        out.append(f"| Switchboard vs LiteLLM, p99 | {us(ours['p99_us'])} vs {us(lite['p99_us'])}"
                   f"{mark(q, 1.0, higher=False) if q is not None else ''} | lower |")
    else:
        out.append("| Switchboard vs LiteLLM, p99 | - | lower |")
    t = ratio(ours and served(ours), echo and served(echo))
    out.append(f"| Switchboard in front vs the echo agent alone | "
               f"{'-' if t is None else f'{t * 100:.0f}%' + mark(t, 0.95)} | ≥ 95% (issue 43) |")

    out.append("")
    out.append("| memory over HTTP, RSS from the end of the warm-up tenth on | measured | goal |")
    out.append("|---|---|---|")
    for name, label in MEMORY_HTTP:
        r = mem_http.get(name)
        d = drift(r) if r else None
        if d is None:
            out.append(f"| {label} | - | flat (±10%) |")
        else:
            first, last = warm(r)[0][1] / 1024, r["samples"][-1][1] / 1024
            out.append(f"| {label} | {r['total']} delegations; {first:.1f} → {last:.1f} MB, max drift "
                       f"{d * 100:.1f}%{mark(d, 0.10, higher=False)} | flat (±10%) |")

    out += ["", cost_table(http, cols)]

    single = inproc.get("single")
    extra = []
    if single and hop:
        r = ratio(hop["graph"]["p50_us"], single["p50_us"])
        extra.append(f"| in-process hop vs a LangGraph supervisor hop (p50) | {r:.0f}×{mark(r, 100)} | ≥ 100× |")
    a, b = hops.get(("hop-lineage", 1)), hops.get(("hop-plain", 1))
    if a and b:
        added = a["p50_us"] - b["p50_us"]
        extra.append(f"| signed lineage, added p50 per hop (c=1) | {us(added)}{mark(added, 50, higher=False)} "
                     f"| < 50 µs |")
    if extra:
        out += ["", "| earlier goals | measured | goal |", "|---|---|---|"] + extra
    return "\n".join(out)


COSTS = [
    # (name in results.jsonl, label, goal in E at 64 connections: issue 43)
    ("bare-axum", "bare axum echo (E)", None),
    ("switchboard-memory", "`/v1/delegate`, in-memory store", 2),
    ("switchboard-http", "`/v1/delegate`, durable SQLite", 3),
    ("switchboard-pg", "`/v1/delegate`, PostgreSQL (Switchboard's process only)", 3),
    ("switchboard-a2a", "A2A `SendMessage`, durable SQLite", None),
]

# Syncs per top-level delegation, at most (issue 43): one at one connection,
# shared by 16 at 64 and by 64 at 1,000 (group commit).
SYNC_GOALS = {1: 1.0, 64: 1 / 16, 1000: 1 / 64}
GOAL_C = 64  # the connections issue 43's CPU and bytes goals are stated at


def cost_table(http, cols):
    """Issue 43's table: what one served delegation cost the server's process
    during the measured run, beside what one bare axum request cost it in the
    same run (E): CPU time (all its threads, user and system), bytes written
    to disk, and the store's transactions and synced ones (its /metrics,
    read before and after the run). The refusals of admission control at
    1000 connections cost CPU too; they are counted in, and the served
    requests alone divide. A ✓ or ✗ marks each figure a goal names."""
    out = ["| per served delegation (server process) | " + " | ".join(f"c={c}" for c in cols) + " | goal |",
           "|---|" + "---|" * (len(cols) + 1)]

    def n_of(r):
        return r and r.get("seconds") and served(r) * r["seconds"]

    def per(name, c, key):
        r = http.get((name, c))
        n = n_of(r)
        return r[key] / n if n and key in r else None

    def e_of(c):
        return per("bare-axum", c, "cpu_us")

    for name, label, goal in COSTS:
        cells = []
        for c in cols:
            v, e = per(name, c, "cpu_us"), e_of(c)
            if v is None:
                cells.append("-")
                continue
            in_e = f" = {v / e:.1f} E" if e and name != "bare-axum" else ""
            ok = mark(v / e, goal, higher=False) if e and goal and c == GOAL_C else ""
            cells.append(f"{v:.0f} µs{in_e}{ok}")
        out.append(f"| {label} CPU | " + " | ".join(cells) + f" | {f'≤ {goal} E at c={GOAL_C}' if goal else ''} |")
    # A2A against the native path, both on durable SQLite
    cells = []
    for c in cols:
        a, n = per("switchboard-a2a", c, "cpu_us"), per("switchboard-http", c, "cpu_us")
        t = ratio(a, n)
        cells.append("-" if t is None else f"{t:.2f}×" + (mark(t, 1.5, higher=False) if c == GOAL_C else ""))
    out.append("| A2A `SendMessage` CPU / `/v1/delegate` CPU (SQLite) | " + " | ".join(cells) + " | ≤ 1.5× |")
    # bytes per delegation: the goal (KiB at c=64) is the native path's
    for name, label, goal in [("switchboard-http", "durable SQLite", 4), ("switchboard-a2a", "A2A, SQLite", None)]:
        cells = []
        for c in cols:
            v = per(name, c, "disk_write_bytes")
            ok = mark(v / 1024, goal, higher=False) if v is not None and goal and c == GOAL_C else ""
            cells.append("-" if v is None else f"{v / 1024:.1f} KiB{ok}")
        out.append(f"| {label}: bytes written | " + " | ".join(cells) + f" | {f'≤ {goal} KiB at c={GOAL_C}' if goal else ''} |")
    # what SQLite's log took of those bytes: pages, 4 KiB each (the checkpoint writes them again)
    for name, label in [("switchboard-http", "durable SQLite"), ("switchboard-a2a", "A2A, SQLite")]:
        cells = [per(name, c, "store_log_pages") for c in cols]
        if any(cells):
            out.append(f"| {label}: pages written to the log | "
                       + " | ".join("-" if v is None else f"{v:.2f}" for v in cells) + " | |")
    # commits per delegation: the sync goals are the native path's
    for name, label, goals in [("switchboard-http", "durable SQLite", SYNC_GOALS),
                               ("switchboard-pg", "PostgreSQL", SYNC_GOALS), ("switchboard-a2a", "A2A, SQLite", {})]:
        cells, commits = [], []
        for c in cols:
            v, t = per(name, c, "store_synced"), per(name, c, "store_commits")
            if v is None or not t and not v:
                cells.append("-")
                commits.append("-")
                continue
            goal = goals.get(c)
            # the requests in flight as the measured window opens (at most one per connection)
            # commit inside it: their syncs are not held against the goal
            r = http.get((name, c))
            judged = max(0, r["store_synced"] - c) / n_of(r)
            cells.append(f"{v:.3f}" + (mark(judged, goal, higher=False) if goal is not None else ""))
            commits.append(f"{t:.3f}")
        out.append(f"| {label}: synced commits | " + " | ".join(cells) + (" | ≤ 1, 1/16, 1/64 |" if goals else " | |"))
        out.append(f"| {label}: all commits | " + " | ".join(commits) + " | |")
    return "\n".join(out)


def in_process(p, inproc, hop):
    """The in-process rows."""
    p("In process (one thread of work per call, zero-work agents)")
    p(f"  {'case':<44} {'p50':>10} {'p99':>10} {'per second':>12}")
    for key, label in [("direct", "agent called directly (no rails)"), ("single", "one delegation, full pipeline"),
                       ("chain", "2-step chain (3 delegations)"), ("fanout", "3-way fan-out (4 delegations)"),
                       ("route", "Prime's router: one message planned")]:
        r = inproc.get(key)
        if r:
            p(f"  {label:<44} {us(r['p50_us']):>10} {us(r['p99_us']):>10} {r['per_sec']:>12.0f}")
    if hop:
        g, m = hop["graph"], hop["models"]
        p(f"  {'LangGraph supervisor -> worker hop':<44} {us(g['p50_us']):>10} {us(g['p99_us']):>10} {g['per_sec']:>12.0f}")
        p(f"  {'  of which the two fake model calls':<44} {us(m['p50_us']):>10} {us(m['p99_us']):>10} {m['per_sec']:>12.0f}")
    versus = [(k, inproc[f"{k}_vs_committed"]) for k in ("single", "chain", "fanout") if f"{k}_vs_committed" in inproc]
    if versus:
        at = versus[0][1].get("committed_at", "?")
        p(f"  against the committed figures ({at}, benches/overhead-baseline.json), in units of the run's reference work:")
        for k, r in versus:
            mark = "  heavier" if r["ratio"] > 1.15 else ""
            p(f"    {k:<10} {r['units']:>8.1f} now, {r['committed_units']:>8.1f} committed: {r['ratio']:.2f}x{mark}")
    p("")


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
    gateway = {r["name"]: r for r in rows if r.get("section") == "gateway"}
    mem_http = {r["name"]: r for r in rows if r.get("section") == "memory-http"}
    hop_levels = sorted({c for (_, c) in hops})
    scale = sorted((r for r in rows if r.get("section") == "scale"), key=lambda r: r["replicas"])

    out = []
    p = out.append
    p(f"machine: {machine.get('cores', '?')} cores, {machine.get('cpu', '?')}; {machine.get('rustc', '')}; "
      f"wrk {machine.get('wrk', '?')}; Python {machine.get('python', '?')}, a2a-sdk {machine.get('a2a_sdk', '?')}, "
      f"uvicorn {machine.get('uvicorn', '?')}, langgraph {hop.get('langgraph', '?') if hop else '?'}; "
      f"PostgreSQL {machine.get('postgres', '?')}" + (f", LiteLLM {machine['litellm']}" if machine.get("litellm") else "")
      + ("  [SMOKE RUN: short, not for comparison]" if machine.get("smoke") else ""))
    p("")
    scale_only = "--scale" in sys.argv
    if not scale_only:
        in_process(p, inproc, hop)
    for c in levels:
        p(f"Over HTTP, {c} connection{'s' if c > 1 else ''} (wrk; peak RSS of the server)")
        p(f"  {'server':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'peak RSS':>10} {'errors':>7}")
        for name, label in SERVERS:
            r = http.get((name, c))
            if r:
                errors = r.get("non_2xx", 0) + r.get("rpc_errors", 0) + r.get("socket_errors", 0)
                p(f"  {label:<44} {served(r):>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} "
                  f"{mib(r.get('peak_rss_kib')):>10} {errors:>7}")
        p("")
    for c in hop_levels:
        p(f"A hop between two Switchboards over HTTP, {c} connection{'s' if c > 1 else ''} (in-memory stores)")
        p(f"  {'through A to its agent served by B':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'errors':>7}")
        for name, label in [("hop-plain", "without lineage"), ("hop-lineage", "with signed lineage (sign + verify)"),
                            ("hop-queue", "through NATS JetStream to a worker (lineage)")]:
            r = hops.get((name, c))
            if r:
                errors = r.get("non_2xx", 0) + r.get("socket_errors", 0)
                p(f"  {label:<44} {served(r):>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} {errors:>7}")
        a, b = hops.get(("hop-lineage", c)), hops.get(("hop-plain", c))
        if a and b:
            p(f"  lineage adds {us(a['p50_us'] - b['p50_us'])} p50 per hop "
              f"(goal < 50 us: {verdict((a['p50_us'] - b['p50_us']), 50, higher=False)})")
        q = hops.get(("hop-queue", c))
        if a and q and served(q) and served(a):
            p(f"  the queue: {served(q) / served(a):.2f}x the direct hop's throughput; "
              f"adds {us(q['p50_us'] - a['p50_us'])} p50, {us(q['p99_us'] - a['p99_us'])} p99")
        p("")
    if scale:
        c = scale[0]["connections"]
        p(f"Scale-out: replicas on one PostgreSQL behind nginx (deploy/nginx.conf), {c} connections, "
          f"/v1/delegate (audit)")
        p(f"  {'replicas':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'errors':>7}  audit chain after the load")
        one = served(scale[0]) if scale[0]["replicas"] == 1 else None
        for r in scale:
            gain = f"  ({served(r) / one:.2f}x one)" if one and r["replicas"] > 1 else ""
            chain = f"{'valid' if r.get('audit_valid') else 'BROKEN'}, {r.get('audit_records', '?')} records"
            p(f"  {r['replicas']:<44} {served(r):>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} "
              f"{errors_of(r):>7}  {chain}{gain}")
        p(f"  CPU seconds per 1,000 delegations during the measured run (of {r['seconds']:.0f} s x 2 cores):")
        for r in scale:
            cpu = r.get("cpu_s") or {}
            per = lambda k: 1000 * cpu.get(k, 0) / r["requests"] if r["requests"] else 0
            total = sum(cpu.values())
            p(f"    {r['replicas']} replica(s): replicas {per('replicas'):.2f}, PostgreSQL {per('postgres'):.2f}, "
              f"nginx {per('nginx'):.2f}; all three used {total:.1f} CPU s")
        p("")
    if scale_only:
        print("\n".join(out))
        return
    if gateway:
        c = next(iter(gateway.values()))["connections"]
        p(f"A2A gateways in front of the same a2a-sdk echo agent, {c} connections (JSON-RPC SendMessage)")
        p(f"  {'server':<44} {'req/s':>10} {'p50':>10} {'p99':>10} {'peak RSS':>10} {'errors':>7}")
        for name, label in GATEWAYS:
            r = gateway.get(name)
            if r:
                p(f"  {label:<44} {served(r):>10.0f} {us(r['p50_us']):>10} {us(r['p99_us']):>10} "
                  f"{mib(r.get('peak_rss_kib')):>10} {errors_of(r):>7}")
        p("  (peak RSS: the gateway's own process, not the echo agent behind it)")
        p("")
    if mem_http:
        n = next(iter(mem_http.values()))
        p(f"Memory over HTTP ({n['connections']} connections; RSS of the server after each wrk run, "
          f"the first tenth of the delegations is the warm-up)")
        for name, label in MEMORY_HTTP:
            r = mem_http.get(name)
            if r:
                step = max(1, len(r["samples"]) // 10)
                rss = ", ".join(f"{kib / 1024:.0f}" for _, kib in r["samples"][::step])
                p(f"  {label:<26} {r['total']:>7} delegations; RSS {rss} MB; peak {mib(r['peak_kib'])}; "
                  f"errors {r['errors']}")
        p("")
    if memory:
        p(f"Memory (in process, durable SQLite store)")
        p(f"  idle after warm-up {mib(memory['idle_kib'])}; {memory['in_flight']} delegations in flight "
          f"{mib(memory['in_flight_kib'])}; after {memory['total'] // 10} more {mib(memory['after_tenth_kib'])}, "
          f"after {memory['total']} more {mib(memory['after_total_kib'])}; peak {mib(memory['peak_kib'])}")
        p("")

    p("(req/s everywhere counts answers only: 2xx without a JSON-RPC error; a 503 over the admission limit")
    p(" or any other refusal is not throughput, and shows in the errors column)")
    p("")
    p("Goals (reported, not asserted)")
    p("")
    p(issue_table(http, levels, gateway, mem_http, inproc, hop, hops, bool(machine.get("smoke"))))
    p("")
    p("Earlier goals, one per line")
    for ours, label in [("switchboard-http", "native"), ("switchboard-a2a", "A2A")]:
        for c in levels:
            a, b = http.get((ours, c)), http.get(("a2a-sdk", c))
            if a and b:
                t = ratio(served(a), served(b))
                q = ratio(a["p99_us"], b["p99_us"])
                if t is None or q is None:
                    p(f"  {label} vs a2a-sdk at {c}: not measured (a server answered nothing)")
                    continue
                p(f"  {label} vs a2a-sdk at {c}: throughput {t:.1f}x (goal >= 10x: {verdict(t, 10)}), "
                  f"p99 {q:.2f} of it (goal <= 0.10: {verdict(q, 0.10, higher=False)})")
    if memory:
        grow = (memory["after_total_kib"] - memory["after_tenth_kib"]) / 1024
        p(f"  RSS with {memory['in_flight']} in flight: {mib(memory['in_flight_kib'])} "
          f"(goal <= 64 MB: {verdict(memory['in_flight_kib'] / 1024, 64, higher=False)}); "
          f"growth over the last {memory['total'] - memory['total'] // 10} delegations: {grow:+.1f} MB")
    print("\n".join(out))
    if "--check" in sys.argv:
        problems = []
        for name, _ in GATEWAYS:
            r = gateway.get(name)
            if r is None:
                if name != "litellm-gateway":
                    problems.append(f"the gateway row {name} is missing")
            elif r["requests"] == 0 or errors_of(r):
                problems.append(f"the gateway row {name}: {r}")
        for name, _ in MEMORY_HTTP:
            r = mem_http.get(name)
            if r is None:
                problems.append(f"the memory run over HTTP {name} is missing")
            elif r["errors"] or len(r["samples"]) < 2 or r["total"] == 0:
                problems.append(f"the memory run over HTTP {name}: {r}")
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
                elif name in ("switchboard-http", "switchboard-pg", "switchboard-a2a") and not r.get("store_synced"):
                    problems.append(f"{name} at {c} connections: no synced commit read from its /metrics")
        if not levels:
            problems.append("no HTTP load ran")
        for c in hop_levels or [None]:
            for name in ["hop-plain", "hop-lineage"]:
                r = hops.get((name, c))
                if r is None:
                    problems.append(f"{name} at {c} connections is missing")
                elif r["requests"] == 0 or r.get("non_2xx", 0) + r.get("socket_errors", 0):
                    problems.append(f"{name} at {c} connections: {r}")
        if not scale:
            problems.append("the scale-out rows are missing")
        for r in scale:
            if r["requests"] == 0 or errors_of(r) or not r.get("audit_valid"):
                problems.append(f"scale-out with {r['replicas']} replicas: {r}")
        for c in hop_levels:
            r = hops.get(("hop-queue", c))
            if r is None:
                problems.append(f"hop-queue at {c} connections is missing")
            elif r["requests"] == 0 or errors_of(r):
                problems.append(f"hop-queue at {c} connections: {r}")
        for p_ in problems:
            print("bench check: " + p_, file=sys.stderr)
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
