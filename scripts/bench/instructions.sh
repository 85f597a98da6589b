#!/usr/bin/env bash
# Instructions per in-process delegation, counted by valgrind (cachegrind):
# the same count on every run, so an A/B of two builds holds on a shared VM
# whose timings swing by half from one minute to the next (docs/PERFORMANCE.md).
#
#   scripts/bench/instructions.sh                 this checkout's bench, every case
#   scripts/bench/instructions.sh OLD NEW         two bench binaries side by side
#
# A binary is `cargo bench --bench overhead`'s (copy it aside before building
# the other commit). Each case runs twice, at N and 3N delegations; the
# difference over 2N is one delegation's instructions, with the start-up
# (the redactor's rules, the team) taken out. Under valgrind, SHA-256 runs
# its portable code (no SHA extensions), so the audit hash counts more than
# it costs on a CPU that has them.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind > /dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 2; }
N=${INSTR_N:-500}
if [ "$#" -eq 0 ]; then
  bin=$(cargo bench --bench overhead --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
  [ -x "$bin" ] || { echo "could not build the overhead bench" >&2; exit 1; }
  set -- "$bin"
fi
count() { # binary case delegations -> instructions
  BENCH_ONLY=$2 BENCH_N=$3 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$1" 2>&1 \
    | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
printf '%-10s' case; for b in "$@"; do printf '%22s' "$(basename "$b" | cut -c1-20)"; done; echo
for case in single chain fanout; do
  printf '%-10s' "$case"
  for b in "$@"; do
    lo=$(count "$b" "$case" "$N"); hi=$(count "$b" "$case" $((3 * N)))
    per=$(( (hi - lo) / (2 * N) ))
    printf '%22s' "$per"
    echo "BENCH_JSON {\"section\":\"instructions\",\"name\":\"$case\",\"binary\":\"$b\",\"per_delegation\":$per}" >&2
  done
  echo
done
