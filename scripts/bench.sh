#!/usr/bin/env bash
# Switchboard's performance, side by side with the limit and the peers, in one
# run on one machine (docs/PERFORMANCE.md explains every row):
#
#   scripts/bench.sh           the full run (about 10 minutes on 2 cores)
#   scripts/bench.sh --smoke   a short run that checks every part still works
#
# It installs what it needs (wrk from Debian, a Python venv under
# target/bench with langgraph and a2a-sdk from PyPI), builds the release
# binaries, and prints the table; the raw figures are in
# target/bench/results.jsonl. Everything listens on 127.0.0.1; every load is
# bounded in time and connections. Nothing here asserts a timing.
set -euo pipefail
cd "$(dirname "$0")/.."

SMOKE=0
case "${1:-}" in
  "") ;;
  --smoke) SMOKE=1 ;;
  *) echo "usage: scripts/bench.sh [--smoke]" >&2; exit 2 ;;
esac

OUT=target/bench
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RESULTS=$OUT/results.jsonl
: > "$RESULTS"
LOGS=$OUT/logs
rm -rf "$LOGS" "$OUT"/db-*
mkdir -p "$LOGS"

if [ "$SMOKE" = 1 ]; then
  DURATION=2; LEVELS="1 64"; BENCH_N=2000; MEMORY_N=3000; IN_FLIGHT=200; HOP_N=200; HOP_LEVELS="1 64"
else
  DURATION=10; LEVELS="1 64 1000"; BENCH_N=20000; MEMORY_N=100000; IN_FLIGHT=1000; HOP_N=2000; HOP_LEVELS="1 64"
fi

say() { printf '\n== %s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  say "installing wrk"
  if [ "$(id -u)" != 0 ]; then echo "wrk is missing: apt-get install wrk (as root)" >&2; exit 2; fi
  apt-get install -y -q wrk >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null; }
fi
VENV=$OUT/venv
if ! "$VENV/bin/python" -c "import langgraph, a2a, uvicorn" 2>/dev/null; then
  say "installing langgraph and a2a-sdk into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check langgraph "a2a-sdk[http-server]" uvicorn
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

say "building release binaries"
cargo build --release --quiet --bin switchboard --example bare_axum
SWITCHBOARD=target/release/switchboard
BARE=target/release/examples/bare_axum

record() { # record SECTION NAME EXTRA-JSON < lines; keeps the BENCH_JSON lines
  local section=$1 name=$2 extra=$3 line
  while IFS= read -r line; do
    case "$line" in
      "BENCH_JSON "*) python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.setdefault("section", sys.argv[2]); d.setdefault("name", sys.argv[3]); d.update(json.loads(sys.argv[4])); print(json.dumps(d))' \
        "${line#BENCH_JSON }" "$section" "$name" "$extra" >> "$RESULTS" ;;
      *) printf '%s\n' "$line" >&2 ;;
    esac
  done
}

# --- in process --------------------------------------------------------------
say "in process: one delegation, a 2-step chain, a 3-way fan-out (cargo bench)"
BENCH_N=$BENCH_N cargo bench --quiet --bench overhead 2>"$LOGS/bench.err" | record inprocess - '{}'
say "memory: $IN_FLIGHT delegations in flight, then $MEMORY_N more (durable SQLite)"
BENCH_MEMORY_N=$MEMORY_N BENCH_IN_FLIGHT=$IN_FLIGHT cargo bench --quiet --bench overhead -- memory 2>"$LOGS/memory.err" \
  | record memory - '{}'
say "LangGraph: a supervisor -> worker hop with fake chat models"
"$VENV/bin/python" scripts/bench/langgraph_hop.py "$HOP_N" | record langgraph hop '{}'

# --- over HTTP ---------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # wait_port PORT PID
  for _ in $(seq 1 200); do
    if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),0.2)' "$1" 2>/dev/null; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
peak_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

start_server() { # start_server NAME PORT; sets SERVER_PID
  local name=$1 port=$2 log="$LOGS/$1-$3.log"
  case "$name" in
    switchboard-http|switchboard-a2a)
      "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" \
        --database-url "sqlite://$OUT/db-$name-$3/switchboard.db" >"$log" 2>&1 & ;;
    switchboard-memory)
      "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" --database-url memory: \
        >"$log" 2>&1 & ;;
    bare-axum) "$BARE" "127.0.0.1:$port" >"$log" 2>&1 & ;;
    a2a-sdk) "$VENV/bin/python" scripts/bench/a2a_echo_server.py "$port" >"$log" 2>&1 & ;;
  esac
  SERVER_PID=$!
  if ! wait_port "$port" "$SERVER_PID"; then
    echo "$name did not start; its log ($log):" >&2
    cat "$log" >&2
    exit 1
  fi
}

load() { # load NAME KIND PATH TOKEN CONNECTIONS
  local name=$1 kind=$2 path=$3 token=$4 c=$5 port threads
  port=$(free_port)
  mkdir -p "$OUT/db-$name-$c"
  start_server "$name" "$port" "$c"
  threads=2; [ "$c" -lt 2 ] && threads=1
  # a short warm-up, then the measured run
  BENCH_KIND=$kind BENCH_TOKEN=$token wrk -t"$threads" -c"$c" -d1s --timeout 10s -s scripts/bench/load.lua \
    "http://127.0.0.1:$port$path" >/dev/null
  BENCH_KIND=$kind BENCH_TOKEN=$token wrk -t"$threads" -c"$c" -d"${DURATION}s" --timeout 10s --latency \
    -s scripts/bench/load.lua "http://127.0.0.1:$port$path" >"$LOGS/$name-$c.wrk"
  grep '^BENCH_JSON' "$LOGS/$name-$c.wrk" \
    | record http "$name" "{\"connections\": $c, \"peak_rss_kib\": $(peak_kib "$SERVER_PID")}"
  stop_server
}

for c in $LEVELS; do
  say "over HTTP at $c connections: switchboard (SQLite, then in memory), bare axum, a2a-sdk, switchboard's A2A"
  load switchboard-http delegate /v1/delegate bench-token "$c"
  load switchboard-memory delegate /v1/delegate bench-token "$c"
  load bare-axum delegate /v1/delegate "" "$c"
  load a2a-sdk a2a / "" "$c"
  load switchboard-a2a a2a /a2a/echo bench-user-token "$c"
done

# --- a hop between two Switchboards, without and with signed lineage --------
# A's `echo` is served by B over HTTP: once without a token (B trusts A's
# Prime to start trees), once with `peer` set, so every call carries a
# lineage token B verifies. The same load through A, side by side.
HOP=$OUT/hop
rm -rf "$HOP"; mkdir -p "$HOP"
hop_configs() { # hop_configs B_PORT: writes a-plain.toml, a-lineage.toml and b.toml into $HOP
  local name
  for name in a b; do
    printf '[lineage]\nname = "%s"\nkey_dir = "%s/%s-keys"\n' "$name" "$HOP" "$name" > "$HOP/$name-keys.toml"
    "$SWITCHBOARD" --config "$HOP/$name-keys.toml" keys --json > "$HOP/$name-keys.json"
  done
  python3 - "$HOP" "$1" <<'PY'
import json, sys
hop, b_port = sys.argv[1], sys.argv[2]
team = open("scripts/bench/team.toml").read()
key = {n: json.load(open(f"{hop}/{n}-keys.json"))["keys"][0]["public_key"] for n in "ab"}
lineage = {n: open(f"{hop}/{n}-keys.toml").read() for n in "ab"}
start, end = team.index('[[agents]]\nslug = "echo"'), team.index("[auth]")
for peer, extra in [("plain", ""), ("lineage", ', peer = "b"')]:
    echo = (f'[[agents]]\nslug = "echo"\nname = "Echo, on B"\nbackend = {{ kind = "http", '
            f'url = "http://127.0.0.1:{b_port}", token_env = "B_TOKEN"{extra} }}\n\n')
    trust = f'\n[[trust]]\nname = "b"\npublic_key = "{key["b"]}"\n'
    open(f"{hop}/a-{peer}.toml", "w").write(team[:start] + echo + team[end:] + "\n" + lineage["a"] + trust)
trust = f'\n[[trust]]\nname = "a"\npublic_key = "{key["a"]}"\nmay_call = ["echo"]\nmay_start_trees = true\n'
open(f"{hop}/b.toml", "w").write(team + "\n" + lineage["b"] + trust)
PY
}
B_PID=""
stop_b() { if [ -n "$B_PID" ]; then kill "$B_PID" 2>/dev/null || true; wait "$B_PID" 2>/dev/null || true; B_PID=""; fi; }
trap 'stop_server; stop_b' EXIT
load_hop() { # load_hop plain|lineage CONNECTIONS
  local peer=$1 c=$2 a_port b_port threads name="hop-$1"
  a_port=$(free_port); b_port=$(free_port)
  hop_configs "$b_port"
  "$SWITCHBOARD" serve --config "$HOP/b.toml" --addr "127.0.0.1:$b_port" --database-url memory: \
    >"$LOGS/$name-b-$c.log" 2>&1 &
  B_PID=$!
  wait_port "$b_port" "$B_PID" || { cat "$LOGS/$name-b-$c.log" >&2; exit 1; }
  B_TOKEN=bench-token "$SWITCHBOARD" serve --config "$HOP/a-$peer.toml" --addr "127.0.0.1:$a_port" \
    --database-url memory: >"$LOGS/$name-a-$c.log" 2>&1 &
  SERVER_PID=$!
  wait_port "$a_port" "$SERVER_PID" || { cat "$LOGS/$name-a-$c.log" >&2; exit 1; }
  threads=2; [ "$c" -lt 2 ] && threads=1
  BENCH_KIND=delegate BENCH_TOKEN=bench-token wrk -t"$threads" -c"$c" -d1s --timeout 10s -s scripts/bench/load.lua \
    "http://127.0.0.1:$a_port/v1/delegate" >/dev/null
  BENCH_KIND=delegate BENCH_TOKEN=bench-token wrk -t"$threads" -c"$c" -d"${DURATION}s" --timeout 10s --latency \
    -s scripts/bench/load.lua "http://127.0.0.1:$a_port/v1/delegate" >"$LOGS/$name-$c.wrk"
  grep '^BENCH_JSON' "$LOGS/$name-$c.wrk" | record hop "$name" "{\"connections\": $c}"
  stop_server
  stop_b
}
for c in $HOP_LEVELS; do
  say "a hop between two Switchboards at $c connections: without, then with signed lineage"
  load_hop plain "$c"
  load_hop lineage "$c"
done

say "versions"
{
  echo "{\"section\": \"machine\", \"name\": \"machine\", \"cores\": $(nproc), \"cpu\": \"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)\", \"rustc\": \"$(rustc --version)\", \"wrk\": \"$(wrk -v 2>&1 | head -1 | awk '{print $2}')\", \"python\": \"$("$VENV/bin/python" --version | awk '{print $2}')\", \"a2a_sdk\": \"$("$VENV/bin/pip" show a2a-sdk | awk '/^Version/ {print $2}')\", \"uvicorn\": \"$("$VENV/bin/pip" show uvicorn | awk '/^Version/ {print $2}')\", \"smoke\": $SMOKE}"
} >> "$RESULTS"

if [ "$SMOKE" = 1 ]; then
  python3 scripts/bench/table.py "$RESULTS" --check
else
  python3 scripts/bench/table.py "$RESULTS"
fi
