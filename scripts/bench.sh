#!/usr/bin/env bash
# Switchboard's performance, side by side with the limit and the peers, in one
# run on one machine (docs/PERFORMANCE.md explains every row):
#
#   scripts/bench.sh              the full run (about 15 minutes on 2 cores)
#   scripts/bench.sh --smoke      a short run that checks every part still works
#   scripts/bench.sh --replicas 3 scale-out only (docs/SCALE.md): 1, 2 … 3
#                                 replicas on one PostgreSQL behind nginx, and
#                                 a hop through NATS JetStream to a worker
#                                 beside the same hop over HTTP
#
# It installs what it needs (wrk from Debian, a Python venv under
# target/bench with langgraph and a2a-sdk from PyPI; for the full run only,
# a second venv with litellm[proxy]), builds the release binaries, and prints
# the table with issue 20's goals beside each figure; the raw figures are in
# target/bench/results.jsonl. PostgreSQL must answer on 127.0.0.1:5432
# (BENCH_POSTGRES_URL overrides the admin URL): each PostgreSQL server gets a
# fresh database, dropped afterwards. Everything listens on 127.0.0.1; every
# load is bounded in time and connections. Nothing here asserts a timing.
set -euo pipefail
cd "$(dirname "$0")/.."

SMOKE=0; REPLICAS=0
case "${1:-}" in
  "") ;;
  --smoke) SMOKE=1; REPLICAS=2 ;;
  --replicas)
    REPLICAS=${2:-}
    case "$REPLICAS" in [1-8]) ;; *) echo "--replicas takes a count from 1 to 8, not '${2:-}'" >&2; exit 2 ;; esac ;;
  *) echo "usage: scripts/bench.sh [--smoke | --replicas N]" >&2; exit 2 ;;
esac
# --replicas alone: only the scale-out part
SCALE_ONLY=0
[ "$SMOKE" = 0 ] && [ "$REPLICAS" -gt 0 ] && SCALE_ONLY=1

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
  MEMORY_HTTP_N=2000; MEMORY_HTTP_STEP=1; GATEWAY_DURATION=2
else
  DURATION=10; LEVELS="1 64 1000"; BENCH_N=20000; MEMORY_N=100000; IN_FLIGHT=1000; HOP_N=2000; HOP_LEVELS="1 64"
  MEMORY_HTTP_N=100000; MEMORY_HTTP_STEP=4; GATEWAY_DURATION=10
fi
GATEWAY_C=16     # the connections of the gateway rows (issue 20 measured LiteLLM there)
MEMORY_HTTP_C=64 # the connections of the memory runs over HTTP

say() { printf '\n== %s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  say "installing wrk"
  if [ "$(id -u)" != 0 ]; then echo "wrk is missing: apt-get install wrk (as root)" >&2; exit 2; fi
  apt-get install -y -q wrk >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null; }
fi
if [ "$REPLICAS" -gt 0 ] && ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  say "installing nginx (the replicas' proxy)"
  if [ "$(id -u)" != 0 ]; then echo "nginx is missing: apt-get install nginx (as root)" >&2; exit 2; fi
  apt-get install -y -q nginx >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q nginx >/dev/null; }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
VENV=$OUT/venv
if [ "$SCALE_ONLY" = 0 ] && ! "$VENV/bin/python" -c "import langgraph, a2a, uvicorn" 2>/dev/null; then
  say "installing langgraph and a2a-sdk into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check langgraph "a2a-sdk[http-server]" uvicorn
fi
LITELLM_VENV=$OUT/litellm-venv
if [ "$SMOKE" = 0 ] && ! "$LITELLM_VENV/bin/python" -c "import litellm.proxy.proxy_server, a2a" 2>/dev/null; then
  say "installing litellm[proxy] into $LITELLM_VENV (full run only)"
  python3 -m venv "$LITELLM_VENV"
  "$LITELLM_VENV/bin/pip" install -q --disable-pip-version-check "litellm[proxy]" "a2a-sdk[http-server]"
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# PostgreSQL: one server on this machine, a fresh database per Switchboard run
PG_ADMIN=${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
if ! command -v psql >/dev/null; then
  say "installing psql"
  if [ "$(id -u)" != 0 ]; then echo "psql is missing: apt-get install postgresql-client (as root)" >&2; exit 2; fi
  apt-get install -y -q postgresql-client >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-client >/dev/null; }
fi
if ! psql "$PG_ADMIN" -qAtc 'select 1' >/dev/null 2>&1; then
  echo "PostgreSQL does not answer at $PG_ADMIN (set BENCH_POSTGRES_URL)" >&2
  exit 2
fi
if [ "$REPLICAS" -gt 0 ] && ! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 4222), 1)' 2>/dev/null; then
  echo "NATS with JetStream does not answer on 127.0.0.1:4222 (the queue hop needs it; .ci/run starts one)" >&2
  exit 2
fi
PG_DBS=""
pg_create() { # pg_create NAME: a fresh, empty database
  PGOPTIONS=--client-min-messages=warning psql "$PG_ADMIN" -qAt -c "DROP DATABASE IF EXISTS $1" \
    -c "CREATE DATABASE $1" >/dev/null
  PG_DBS="$PG_DBS $1"
}
pg_drop() { psql "$PG_ADMIN" -qAt -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null 2>&1 || true; }

say "building release binaries"
cargo build --release --quiet --bin switchboard --example bare_axum
TARGET=${CARGO_TARGET_DIR:-target}
SWITCHBOARD=$TARGET/release/switchboard
BARE=$TARGET/release/examples/bare_axum

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
if [ "$SCALE_ONLY" = 0 ]; then
say "in process: one delegation, a 2-step chain, a 3-way fan-out (cargo bench)"
BENCH_N=$BENCH_N cargo bench --quiet --bench overhead 2>"$LOGS/bench.err" | record inprocess - '{}'
say "memory: $IN_FLIGHT delegations in flight, then $MEMORY_N more (durable SQLite)"
BENCH_MEMORY_N=$MEMORY_N BENCH_IN_FLIGHT=$IN_FLIGHT cargo bench --quiet --bench overhead -- memory 2>"$LOGS/memory.err" \
  | record memory - '{}'
say "LangGraph: a supervisor -> worker hop with fake chat models"
"$VENV/bin/python" scripts/bench/langgraph_hop.py "$HOP_N" | record langgraph hop '{}'
fi

# --- over HTTP ---------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # wait_port PORT PID [TENTHS]: until PORT answers (default 20 s)
  for _ in $(seq 1 "${3:-200}"); do
    if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),0.2)' "$1" 2>/dev/null; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
peak_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# cost_of PID: the process's CPU time so far (all threads, user + system, clock
# ticks) and the bytes it caused to be written to disk
cost_of() {
  local ticks bytes
  ticks=$(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat" 2>/dev/null || echo 0)
  bytes=$(awk '/^write_bytes/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0)
  echo "${ticks:-0} ${bytes:-0}"
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# store_of PORT: what the server's store committed so far (its /metrics):
# writes, transactions, synced ones and pages written to SQLite's log;
# "0 0 0 0" for a server without them
store_of() {
  python3 - "$1" <<'PY' 2>/dev/null || echo "0 0 0 0"
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
v = {l.split()[0]: int(float(l.split()[1])) for l in text.splitlines() if l.startswith("switchboard_store_")}
print(*(v.get(f"switchboard_store_{k}_total", 0) for k in ("writes", "commits", "synced_commits", "log_pages")))
PY
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

SERVER_PID=""   # the server under load
ECHO_PID=""     # the a2a-sdk echo agent behind a gateway
SERVER_DB=""    # the server's PostgreSQL database, dropped when it stops
B_PID=""        # the second Switchboard of the hop rows
stop_pid() { if [ -n "$1" ]; then kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; fi; }
stop_server() {
  stop_pid "$SERVER_PID"; SERVER_PID=""
  stop_pid "$ECHO_PID"; ECHO_PID=""
  if [ -n "$SERVER_DB" ]; then pg_drop "$SERVER_DB"; SERVER_DB=""; fi
}
cleanup() { stop_server; stop_pid "$B_PID"; for db in $PG_DBS; do pg_drop "$db"; done; }
trap cleanup EXIT

start_echo() { # start_echo TAG: the a2a-sdk echo agent on a fresh port; sets ECHO_PID, ECHO_PORT
  ECHO_PORT=$(free_port)
  "$VENV/bin/python" scripts/bench/a2a_echo_server.py "$ECHO_PORT" >"$LOGS/echo-$1.log" 2>&1 &
  ECHO_PID=$!
  wait_port "$ECHO_PORT" "$ECHO_PID" || { echo "the echo agent did not start:" >&2; cat "$LOGS/echo-$1.log" >&2; exit 1; }
}

start_server() { # start_server NAME PORT TAG; sets SERVER_PID
  local name=$1 port=$2 tag=$3 log="$LOGS/$1-$3.log" db
  case "$name" in
    switchboard-http|switchboard-a2a)
      mkdir -p "$OUT/db-$name-$tag"
      "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" \
        --database-url "sqlite://$OUT/db-$name-$tag/switchboard.db" >"$log" 2>&1 & ;;
    switchboard-pg)
      db="sbbench_${tag}_$$"
      pg_create "$db"; SERVER_DB=$db
      "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" \
        --database-url "${PG_ADMIN%/*}/$db" >"$log" 2>&1 & ;;
    switchboard-memory)
      "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" --database-url memory: \
        >"$log" 2>&1 & ;;
    bare-axum) "$BARE" "127.0.0.1:$port" >"$log" 2>&1 & ;;
    a2a-sdk|echo-alone) "$VENV/bin/python" scripts/bench/a2a_echo_server.py "$port" >"$log" 2>&1 & ;;
    switchboard-gateway)
      # our a2a backend in front of the echo agent; the durable SQLite store, as everywhere
      start_echo "$name-$tag"
      awk -v port="$ECHO_PORT" '/^\[auth\]/ {
          print "[[agents]]"; print "slug = \"remote-echo\""; print "name = \"Echo, over A2A\""
          print "description = \"The a2a-sdk echo agent of scripts/bench/a2a_echo_server.py.\""
          print "backend = { kind = \"a2a\", url = \"http://127.0.0.1:" port "\" }"; print ""
        } { print }' scripts/bench/team.toml > "$OUT/gateway-team.toml"
      mkdir -p "$OUT/db-$name-$tag"
      "$SWITCHBOARD" serve --config "$OUT/gateway-team.toml" --addr "127.0.0.1:$port" \
        --database-url "sqlite://$OUT/db-$name-$tag/switchboard.db" >"$log" 2>&1 & ;;
    litellm-gateway)
      start_echo "$name-$tag"
      sed "s/ECHO_PORT/$ECHO_PORT/" scripts/bench/litellm.yaml > "$OUT/litellm.yaml"
      # its bundled model cost map: no fetch from the internet at start
      LITELLM_LOCAL_MODEL_COST_MAP=True "$LITELLM_VENV/bin/litellm" --config "$OUT/litellm.yaml" \
        --host 127.0.0.1 --port "$port" >"$log" 2>&1 & ;;
  esac
  SERVER_PID=$!
  if ! wait_port "$port" "$SERVER_PID" 1200; then
    echo "$name did not start; its log ($log):" >&2
    cat "$log" >&2
    exit 1
  fi
}

wrk_run() { # wrk_run PORT PATH KIND TOKEN CONNECTIONS SECONDS
  local threads=2
  [ "$5" -lt 2 ] && threads=1
  BENCH_KIND=$3 BENCH_TOKEN=$4 BENCH_TARGET=${BENCH_TARGET:-echo} \
    wrk -t"$threads" -c"$5" -d"$6s" --timeout 10s --latency -s scripts/bench/load.lua "http://127.0.0.1:$1$2"
}

load() { # load NAME KIND PATH TOKEN CONNECTIONS [SECTION] [SECONDS]
  local name=$1 kind=$2 path=$3 token=$4 c=$5 section=${6:-http} seconds=${7:-$DURATION} port
  port=$(free_port)
  start_server "$name" "$port" "$c"
  # a short warm-up, then the measured run
  wrk_run "$port" "$path" "$kind" "$token" "$c" 1 >/dev/null
  # what the measured run cost the server process (not wrk, not PostgreSQL, not the kernel's own threads)
  # and what its store committed meanwhile (read before the CPU, so the reading is not in it)
  local ticks0 bytes0 ticks1 bytes1 w0 c0 s0 p0 w1 c1 s1 p1
  read -r w0 c0 s0 p0 <<<"$(store_of "$port")"
  read -r ticks0 bytes0 <<<"$(cost_of "$SERVER_PID")"
  wrk_run "$port" "$path" "$kind" "$token" "$c" "$seconds" >"$LOGS/$name-$c.wrk"
  read -r ticks1 bytes1 <<<"$(cost_of "$SERVER_PID")"
  read -r w1 c1 s1 p1 <<<"$(store_of "$port")"
  grep '^BENCH_JSON' "$LOGS/$name-$c.wrk" \
    | record "$section" "$name" "{\"connections\": $c, \"peak_rss_kib\": $(peak_kib "$SERVER_PID"), \"cpu_us\": $(((ticks1 - ticks0) * TICK_US)), \"disk_write_bytes\": $((bytes1 - bytes0)), \"store_writes\": $((w1 - w0)), \"store_commits\": $((c1 - c0)), \"store_synced\": $((s1 - s0)), \"store_log_pages\": $((p1 - p0))}"
  stop_server
}

[ "$SCALE_ONLY" = 1 ] && LEVELS=""
for c in $LEVELS; do
  say "over HTTP at $c connections: switchboard (SQLite, PostgreSQL, in memory), bare axum, a2a-sdk, switchboard's A2A"
  load switchboard-http delegate /v1/delegate bench-token "$c"
  load switchboard-pg delegate /v1/delegate bench-token "$c"
  load switchboard-memory delegate /v1/delegate bench-token "$c"
  load bare-axum delegate /v1/delegate "" "$c"
  load a2a-sdk a2a / "" "$c"
  load switchboard-a2a a2a /a2a/echo bench-user-token "$c"
done

# --- A2A gateways in front of the same echo agent ------------------------------
# The a2a-sdk echo agent alone, then behind Switchboard's A2A endpoint (our
# a2a backend, durable SQLite store), then behind the LiteLLM proxy's
# /a2a/{agent} route (full run only: LiteLLM is heavy). A fresh echo agent
# for each row.
if [ "$SCALE_ONLY" = 0 ]; then
say "A2A gateways at $GATEWAY_C connections: the echo agent alone, behind Switchboard, behind LiteLLM"
load echo-alone a2a / "" "$GATEWAY_C" gateway "$GATEWAY_DURATION"
BENCH_TARGET=remote-echo load switchboard-gateway a2a /a2a/remote-echo bench-user-token "$GATEWAY_C" gateway \
  "$GATEWAY_DURATION"
if [ "$SMOKE" = 0 ]; then
  load litellm-gateway a2a /a2a/echo sk-bench-master "$GATEWAY_C" gateway "$GATEWAY_DURATION"
fi
fi

# --- memory over HTTP: RSS while delegations go through a server ---------------
# wrk runs of MEMORY_HTTP_STEP seconds at MEMORY_HTTP_C connections, one after
# another, until MEMORY_HTTP_N delegations went through (at least 2 runs, at
# most 100);
# RSS (VmRSS) is read after each run. The first tenth is the warm-up
# (table.py measures the drift from there). Durable SQLite, PostgreSQL, and
# A2A SendMessage (SQLite).
memory_http() { # memory_http NAME KIND PATH TOKEN
  local name=$1 kind=$2 path=$3 token=$4 port samples="" errors=0 done=0 runs=0 line
  port=$(free_port)
  start_server "$name" "$port" memory
  # at least two runs: a drift needs two readings, even when one run passes N
  while [ "$runs" -lt 2 ] || { [ "$done" -lt "$MEMORY_HTTP_N" ] && [ "$runs" -lt 100 ]; }; do
    line=$(wrk_run "$port" "$path" "$kind" "$token" "$MEMORY_HTTP_C" "$MEMORY_HTTP_STEP" | grep '^BENCH_JSON' || true)
    read -r n e < <(python3 -c 'import json,sys
d = json.loads(sys.argv[1][len("BENCH_JSON "):]) if sys.argv[1] else {"requests": 0, "socket_errors": 1}
print(d["requests"], d.get("non_2xx", 0) + d.get("rpc_errors", 0) + d.get("socket_errors", 0))' "$line")
    done=$((done + n)); errors=$((errors + e)); runs=$((runs + 1))
    samples="$samples${samples:+, }[$done, $(rss_kib "$SERVER_PID")]"
  done
  echo "{\"section\": \"memory-http\", \"name\": \"$name\", \"total\": $done, \"connections\": $MEMORY_HTTP_C, \"samples\": [$samples], \"peak_kib\": $(peak_kib "$SERVER_PID"), \"errors\": $errors}" >> "$RESULTS"
  stop_server
}
if [ "$SCALE_ONLY" = 0 ]; then
say "memory over HTTP: $MEMORY_HTTP_N delegations at $MEMORY_HTTP_C connections, RSS after each ${MEMORY_HTTP_STEP} s"
memory_http switchboard-http delegate /v1/delegate bench-token
memory_http switchboard-pg delegate /v1/delegate bench-token
memory_http switchboard-a2a a2a /a2a/echo bench-user-token
fi

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
# the same hop through NATS JetStream: B runs `switchboard worker --agents echo`
echo = '[[agents]]\nslug = "echo"\nname = "Echo, on B\'s workers"\nbackend = { kind = "queue", peer = "b" }\n\n'
# A trusts B's key: it takes only the answers B's workers signed
open(f"{hop}/a-queue.toml", "w").write(team[:start] + echo + team[end:] + "\n" + lineage["a"] + trust)
trust = f'\n[[trust]]\nname = "a"\npublic_key = "{key["a"]}"\nmay_call = ["echo"]\nmay_start_trees = true\n'
open(f"{hop}/b.toml", "w").write(team + "\n" + lineage["b"] + trust)
PY
}
B_PID=""
stop_b() { stop_pid "$B_PID"; B_PID=""; }
load_hop() { # load_hop plain|lineage|queue CONNECTIONS
  local peer=$1 c=$2 a_port b_port threads name="hop-$1"
  a_port=$(free_port); b_port=$(free_port)
  hop_configs "$b_port"
  if [ "$peer" = queue ]; then
    # B's worker: its first line says it is pulling
    "$SWITCHBOARD" --config "$HOP/b.toml" --database-url memory: worker --agents echo --concurrency 64 \
      >"$LOGS/$name-b-$c.log" 2>&1 &
    B_PID=$!
    for _ in $(seq 1 100); do grep -q "worker serving" "$LOGS/$name-b-$c.log" && break; sleep 0.1; done
    grep -q "worker serving" "$LOGS/$name-b-$c.log" || { cat "$LOGS/$name-b-$c.log" >&2; exit 1; }
  else
    "$SWITCHBOARD" serve --config "$HOP/b.toml" --addr "127.0.0.1:$b_port" --database-url memory: \
      >"$LOGS/$name-b-$c.log" 2>&1 &
    B_PID=$!
    wait_port "$b_port" "$B_PID" || { cat "$LOGS/$name-b-$c.log" >&2; exit 1; }
  fi
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
  if [ "$SCALE_ONLY" = 0 ]; then
    say "a hop between two Switchboards at $c connections: without, then with signed lineage"
    load_hop plain "$c"
  fi
  load_hop lineage "$c"
  if [ "$REPLICAS" -gt 0 ]; then
    say "the same hop through NATS JetStream to a worker at $c connections"
    load_hop queue "$c"
  fi
done

# --- scale-out: 1 … REPLICAS replicas on one PostgreSQL behind nginx ------------
# deploy/nginx.conf as it is but for its listen ports, its upstreams the
# replicas of the run; a fresh database per replica count; the same load
# through nginx each time (docs/SCALE.md).
SCALE_C=64
cpu_of() { # cpu_of PID… -- PID: CPU seconds of the first PIDs, of the last one, and of every postgres process
  python3 - "$@" <<'PY'
import os, sys
tick = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tick  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return 0.0
def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""
def ppid(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return ""
def tree(pids):  # the processes and their children (nginx's workers)
    pids = set(pids)
    return pids | {p for p in os.listdir("/proc") if p.isdigit() and ppid(p) in pids}
args = sys.argv[1:]
split = args.index("--")
pg = sum(cpu(p) for p in os.listdir("/proc") if p.isdigit() and comm(p) == "postgres")
print(sum(cpu(p) for p in tree(args[:split])), sum(cpu(p) for p in tree(args[split + 1:])), pg)
PY
}
scale_run() { # scale_run K: K replicas behind nginx, SCALE_C connections
  local k=$1 db="sbscale_${1}_$$" i port ngx dir="$OUT/nginx-$1" pids=() ngx_pid
  pg_create "$db"
  # the schema first, once: replicas starting together would race to make it
  "$SWITCHBOARD" --config scripts/bench/team.toml --database-url "${PG_ADMIN%/*}/$db" agents >/dev/null
  mkdir -p "$dir"
  : >"$dir/nginx-upstreams.conf"
  for i in $(seq 1 "$k"); do
    port=$(free_port)
    "$SWITCHBOARD" serve --config scripts/bench/team.toml --addr "127.0.0.1:$port" \
      --database-url "${PG_ADMIN%/*}/$db" >"$LOGS/scale-$k-$i.log" 2>&1 &
    pids+=($!)
    wait_port "$port" "$!" || { cat "$LOGS/scale-$k-$i.log" >&2; exit 1; }
    echo "server 127.0.0.1:$port max_fails=3 fail_timeout=10s;" >>"$dir/nginx-upstreams.conf"
  done
  ngx=$(free_port)
  sed -e "s/^\(\s*listen\) 8080;$/\1 127.0.0.1:$ngx;/" -e "s/^\(\s*listen\) 8081 http2;$/\1 127.0.0.1:$(free_port) http2;/" \
    deploy/nginx.conf >"$dir/nginx.conf"
  local user=""
  [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1 && user=" user www-data;"
  "$NGINX" -c "$dir/nginx.conf" -p "$dir/" -e stderr -g "daemon off; pid $dir/nginx.pid;$user" \
    >"$dir/access.log" 2>"$LOGS/nginx-$k.log" &
  ngx_pid=$!
  wait_port "$ngx" "$ngx_pid" || { cat "$LOGS/nginx-$k.log" >&2; exit 1; }
  wrk_run "$ngx" /v1/delegate delegate bench-token "$SCALE_C" 1 >/dev/null
  # where the CPU goes during the measured run: the replicas, nginx, PostgreSQL (all its processes)
  local before after
  before=$(cpu_of "${pids[@]}" -- "$ngx_pid")
  wrk_run "$ngx" /v1/delegate delegate bench-token "$SCALE_C" "$DURATION" >"$LOGS/scale-$k.wrk"
  after=$(cpu_of "${pids[@]}" -- "$ngx_pid")
  kill -QUIT "$ngx_pid" 2>/dev/null || true; wait "$ngx_pid" 2>/dev/null || true
  for i in "${pids[@]}"; do stop_pid "$i"; done
  # the audit chain the replicas wrote at once: one valid chain (switchboard audit --verify)
  local audit
  audit=$("$SWITCHBOARD" --config scripts/bench/team.toml --database-url "${PG_ADMIN%/*}/$db" --json audit --verify \
    --last 1 | python3 -c 'import json,sys; v=json.load(sys.stdin)["verify"]; print(json.dumps({"audit_valid": v["valid"], "audit_records": v["records"]}))')
  grep '^BENCH_JSON' "$LOGS/scale-$k.wrk" \
    | record scale "replicas-$k" "$(python3 -c 'import json,sys
d = json.loads(sys.argv[1]); b, a = sys.argv[4].split(), sys.argv[5].split()
d.update(replicas=int(sys.argv[2]), connections=int(sys.argv[3]),
         cpu_s={k: round(float(y) - float(x), 2) for k, x, y in zip(["replicas", "nginx", "postgres"], b, a)})
print(json.dumps(d))' "$audit" "$k" "$SCALE_C" "$before" "$after")"
  pg_drop "$db"
}
if [ "$REPLICAS" -gt 0 ]; then
  for k in $(seq 1 "$REPLICAS"); do
    say "scale-out: $k replica(s) on one PostgreSQL behind nginx, $SCALE_C connections"
    scale_run "$k"
  done
fi

say "versions"
{
  echo "{\"section\": \"machine\", \"name\": \"machine\", \"cores\": $(nproc), \"cpu\": \"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)\", \"rustc\": \"$(rustc --version)\", \"wrk\": \"$(wrk -v 2>&1 | head -1 | awk '{print $2}')\", \"python\": \"$("$VENV/bin/python" --version 2>/dev/null | awk '{print $2}')\", \"a2a_sdk\": \"$("$VENV/bin/pip" show a2a-sdk 2>/dev/null | awk '/^Version/ {print $2}')\", \"uvicorn\": \"$("$VENV/bin/pip" show uvicorn 2>/dev/null | awk '/^Version/ {print $2}')\", \"postgres\": \"$(psql "$PG_ADMIN" -qAtc 'show server_version' | awk '{print $1}')\", \"litellm\": \"$( [ "$SMOKE" = 0 ] && [ "$SCALE_ONLY" = 0 ] && "$LITELLM_VENV/bin/pip" show litellm | awk '/^Version/ {print $2}')\", \"smoke\": $SMOKE}"
} >> "$RESULTS"

if [ "$SMOKE" = 1 ]; then
  python3 scripts/bench/table.py "$RESULTS" --check
elif [ "$SCALE_ONLY" = 1 ]; then
  python3 scripts/bench/table.py "$RESULTS" --scale
else
  python3 scripts/bench/table.py "$RESULTS"
fi
