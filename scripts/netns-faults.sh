#!/usr/bin/env bash
# Scale-out faults across hosts (issue 18): network namespaces with veth
# pairs on this machine, two `switchboard serve` replicas and two
# `switchboard worker`s each in its own namespace, against a throwaway
# PostgreSQL and a NATS server with JetStream on 10.77.0.1; then a replica
# killed mid-tree, a worker killed mid-delegation (its host, and its process
# alone), a worker cut off from NATS for less and for more than the
# deadline, NATS restarted; and the queue's added latency. What each phase
# expects and how it counts: scripts/netns-faults.py; the figures:
# docs/SCALE.md, "Faults across hosts".
#
# Runs as root (CI does, from .ci/run); without root or `ip netns` it says
# why and exits 0 (1 under CI=true). The binary is $SWITCHBOARD_BIN (default
# target/debug/switchboard). NETNS_FAULTS_PHASES=a,b,b2,c,d,e picks phases,
# NETNS_FAULTS_KEEP=DIR keeps the logs, NETNS_FAULTS_TIMEOUT (s, default
# 240) bounds the run. Everything it makes is removed on any exit: by the
# python script itself, and by this trap should that script be killed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null 2>&1; then
  echo "netns-faults: skipped: no python3" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 0
fi
trap 'python3 scripts/netns-faults.py --teardown || true' EXIT
trap 'exit 130' INT TERM
python3 scripts/netns-faults.py "$@"
