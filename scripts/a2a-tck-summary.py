#!/usr/bin/env python3
"""Counts an A2A TCK compatibility report (reports/compatibility.json of the
TCK's 1.0-dev branch) by transport and requirement level: how many MUST,
SHOULD and MAY requirements pass, fail or are skipped on each transport.

Usage: a2a-tck-summary.py reports/compatibility.json
"""
import json
import sys
from collections import Counter, defaultdict

report = json.load(open(sys.argv[1]))
counts = defaultdict(Counter)  # transport -> (level, status) -> n
failed = []
for req_id, r in sorted(report["per_requirement"].items()):
    for transport, status in r["transports"].items():
        counts[transport][(r["level"], status)] += 1
        if status == "FAIL":
            failed.append(f"{req_id} ({transport})")
print("requirements per transport (pass/fail/skip):")
for transport in sorted(counts):
    c = counts[transport]
    parts = [f"{lvl} {c[(lvl, 'PASS')]}/{c[(lvl, 'FAIL')]}/{c[(lvl, 'SKIPPED')]}" for lvl in ("MUST", "SHOULD", "MAY")]
    print(f"  {transport:10} " + "  ".join(parts))
summary = report.get("summary", report)
for level in ("must", "should", "may"):
    print(f"{level}_compatibility: {summary.get(level + '_compatibility')}")
if failed:
    print("failed: " + ", ".join(failed))
