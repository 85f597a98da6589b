#!/usr/bin/env bash
# Instructions per in-process delegation, counted by valgrind (cachegrind):
# the same count on every run and under any load, so an A/B of two builds
# holds on a shared VM whose timings swing by half from one minute to the
# next (docs/PERFORMANCE.md, "Instructions per delegation").
#
#   scripts/bench/instructions.sh             this checkout's bench, every case
#   scripts/bench/instructions.sh OLD NEW     two bench binaries side by side
#   scripts/bench/instructions.sh --check     this checkout's against the committed
#                                             count (benches/instructions-baseline.json):
#                                             prints the ratios, fails past 1.5x
#   scripts/bench/instructions.sh --save      writes this checkout's count there
#   INSTR_CASES=route scripts/bench/instructions.sh OLD NEW
#                                             Prime's router instead: one message
#                                             planned (the evaluation's tune requests
#                                             in turn; set INSTR_N=175, one pass)
#
# A binary is `cargo bench --bench overhead`'s (copy it aside before building
# the other commit). Each case runs twice, at N and 3N delegations; the
# difference over 2N is one delegation's instructions, the start-up (the
# redactor's rules, the team) taken out. Under valgrind SHA-256 runs its
# portable code (no SHA extensions), so the audit hash counts for more than
# it costs on a CPU that has them.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind > /dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 2; }
N=${INSTR_N:-500}
BASELINE=benches/instructions-baseline.json
MODE=compare
case "${1:-}" in
  --check) MODE=check; shift ;;
  --save) MODE=save; shift ;;
  --*) echo "usage: scripts/bench/instructions.sh [--check | --save | OLD NEW]" >&2; exit 2 ;;
esac
if [ "$#" -eq 0 ]; then
  bin=$(cargo bench --bench overhead --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
  [ -x "$bin" ] || { echo "could not build the overhead bench" >&2; exit 1; }
  set -- "$bin"
fi
count() { # binary case delegations -> instructions
  BENCH_ONLY=$2 BENCH_N=$3 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$1" 2>&1 \
    | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
declare -A per
printf '%-10s' case; for b in "$@"; do printf '%22s' "$(basename "$b" | cut -c1-20)"; done; echo
CASES=${INSTR_CASES:-single chain fanout}
[ "$MODE" = compare ] || CASES="single chain fanout"
for case in $CASES; do
  printf '%-10s' "$case"
  for b in "$@"; do
    lo=$(count "$b" "$case" "$N"); hi=$(count "$b" "$case" $((3 * N)))
    [ -n "$lo" ] && [ -n "$hi" ] || { echo; echo "valgrind gave no count for $case ($b)" >&2; exit 1; }
    per[$case]=$(( (hi - lo) / (2 * N) ))
    printf '%22s' "${per[$case]}"
  done
  echo
done
[ "$MODE" = compare ] && exit 0
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$MODE" "$BASELINE" "$commit" "${per[single]}" "${per[chain]}" "${per[fanout]}" <<'PY'
import json, sys
mode, path, commit = sys.argv[1:4]
now = dict(zip(["single", "chain", "fanout"], map(int, sys.argv[4:7])))
if mode == "save":
    json.dump({"about": "instructions of one in-process delegation (single) and of the 2-step chain and the 3-way fan-out, "
               "counted by scripts/bench/instructions.sh under valgrind; --check compares a checkout's count with these",
               "commit": commit, "instructions": now}, open(path, "w"), indent=2)
    open(path, "a").write("\n")
    print(f"saved to {path} (commit {commit})")
    sys.exit(0)
try:
    kept = json.load(open(path))
    committed = kept["instructions"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"{path}: cannot read the committed count ({e}); scripts/bench/instructions.sh --save writes it")
print(f"\nagainst the count committed at {kept.get('commit', '?')} ({path})")
print(f"{'case':<10}{'now':>12}{'committed':>12}{'ratio':>8}")
worst = 0.0
for case, n in now.items():
    ratio = n / max(committed.get(case, 0), 1)
    worst = max(worst, ratio)
    mark = "  heavier than the committed count" if ratio > 1.10 else ""
    print(f"{case:<10}{n:>12}{committed.get(case, 0):>12}{ratio:>7.2f}x{mark}")
    print("BENCH_JSON " + json.dumps({"section": "instructions", "name": case, "per_delegation": n,
                                      "committed": committed.get(case), "ratio": ratio}))
if worst > 1.5:
    sys.exit(f"a case takes {worst:.2f}x the committed instructions (the limit is 1.5x): find what made it heavier "
             f"(docs/PERFORMANCE.md), or commit the new count with --save if it is meant")
PY
