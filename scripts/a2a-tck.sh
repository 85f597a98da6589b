#!/usr/bin/env bash
# Runs the A2A TCK (a2aproject/a2a-tck, branch 1.0-dev) against `switchboard serve`
# over JSON-RPC, HTTP+JSON and gRPC, and prints the TCK's summary and the
# MUST/SHOULD/MAY counts per transport from its compatibility report.
#
#   scripts/a2a-tck.sh [TCK_DIR]
#
# TCK_DIR: a checkout of the TCK's 1.0-dev branch (default /work/tck; cloned from
# $TCK_REPO, default https://github.com/a2aproject/a2a-tck, when missing). Its Python
# dependencies go into $TCK_DIR/.venv. Extra arguments for run_tck.py: TCK_ARGS
# (e.g. TCK_ARGS="--level must"). Not run in CI (CI cannot reach GitHub).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tck=${1:-/work/tck}
port=${TCK_PORT:-7431}
transports=${TCK_TRANSPORTS:-jsonrpc,http_json,grpc}

if [ ! -f "$tck/run_tck.py" ]; then
  git clone -q -b 1.0-dev "${TCK_REPO:-https://github.com/a2aproject/a2a-tck}" "$tck"
fi
if [ ! -x "$tck/.venv/bin/python" ]; then
  python3 -m venv "$tck/.venv"
  "$tck/.venv/bin/pip" install -q -e "$tck"
fi

# the built-in team plus the conformance agent; anonymous A2A calls act as user "tck";
# gRPC calls without a tenant (the TCK sends none) go to the conformance agent;
# push notifications may reach the TCK's webhook receiver on localhost
work=$(mktemp -d /tmp/switchboard-tck.XXXXXX)
{ printf '[a2a]\nanonymous_user = "tck"\ngrpc_default_agent = "a2a-conformance"\n[a2a.push]\nallow_private = ["127.0.0.1", "::1"]\n'; cat src/config/default.toml; cat <<'TOML'

[[agents]]
slug = "a2a-conformance"
name = "A2A conformance agent"
backend = { kind = "builtin", name = "a2a-conformance" }
TOML
} > "$work/team.toml"

# SWITCHBOARD_BIN: a binary already built (e.g. by `cargo test`, whose features differ from `cargo build`'s)
bin=${SWITCHBOARD_BIN:-}
if [ -z "$bin" ]; then
  cargo build --quiet --bin switchboard
  bin=${CARGO_TARGET_DIR:-target}/debug/switchboard
fi
"$bin" --config "$work/team.toml" --database-url memory: serve --addr "127.0.0.1:$port" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

cd "$tck"
rm -f reports/compatibility.json
set +e
# shellcheck disable=SC2086
.venv/bin/python run_tck.py --sut-host "http://127.0.0.1:$port/a2a/a2a-conformance" --transport "$transports" ${TCK_ARGS:-} \
  2>&1 | tee "$work/tck.log" | tail -40
rc=${PIPESTATUS[0]}
set -e
if [ -f reports/compatibility.json ]; then
  python3 "$root/scripts/a2a-tck-summary.py" reports/compatibility.json || true
fi
echo "TCK output: $work/tck.log; server log: $work/serve.log; exit $rc"
exit "$rc"
