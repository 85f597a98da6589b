#!/usr/bin/env bash
# deploy/ checked for real: nginx with deploy/nginx.conf in front of three
# `switchboard serve` replicas on one fresh PostgreSQL database, everything
# on 127.0.0.1; then the compose file and the systemd unit are validated.
#
#   (a) 30 GET /healthz through nginx reach all three replicas
#   (b) a delegation through nginx succeeds and its tree is readable from
#       each replica directly; an agent card fetched through nginx names
#       nginx's address
#   (c) GET /v1/events streams through nginx while delegations run
#   (d) one replica SIGKILLed: 20 delegations through nginx all succeed
#       (and nginx did pass requests on from the dead one)
#   (e) deploy/compose.yaml validates; deploy/switchboard.service verifies
#       where systemd-analyze exists; deploy/switchboard.toml on the built-in
#       team loads with the whole team
#   (f) A2A's gRPC binding answers through nginx's grpc_pass server
#   (g) a body just under the server's limit reaches a replica through
#       nginx; one over it gets the server's JSON 413 (from nginx), not a
#       502 or nginx's page
#
# Runs as root (CI does, from .ci/run); installs nginx and the PostgreSQL
# client when missing, and, where no `docker compose` is, Debian's
# docker-compose (1.29) to validate the compose file against the Compose
# schema; python3's yaml checks what the file must hold in any case. Needs PostgreSQL on 127.0.0.1:5432 with trust auth for
# user postgres and a database `test` (what .ci/run provides). The binary is
# $SWITCHBOARD_BIN (default target/debug/switchboard, built by cargo test).
# Bounded: after the installs, it gives up after 110 s. Cleans up
# (processes, database, files) on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${SWITCHBOARD_BIN:-target/debug/switchboard}
PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres
export PGHOST PGPORT PGUSER
started=$(date +%s)

say() { echo "deploy-check: $*"; }
fail() {
  echo "deploy-check: FAIL: $*" >&2
  exit 1
}

[ -x "$BIN" ] || fail "no switchboard binary at $BIN (set SWITCHBOARD_BIN, or build it: cargo build)"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

need_apt=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx)
command -v psql >/dev/null 2>&1 || need_apt+=(postgresql-client)
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null \
    || say "could not install ${need_apt[*]}; going on with what is here"
fi
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check pyyaml
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || fail "nginx is not installed (apt-get install nginx)"
command -v psql >/dev/null 2>&1 || fail "psql is not installed (apt-get install postgresql-client)"

tmp=$(mktemp -d /tmp/switchboard-deploy-check.XXXXXX)
db="switchboard_deploy_check_$$"
pids=()
nginx_pid=""
watchdog=""
db_made=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $nginx_pid; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$tmp"/*.log; do
      [ -s "$f" ] || continue
      echo "--- $(basename "$f") (last 25 lines)" >&2
      tail -n 25 "$f" >&2
    done
  fi
  if [ -n "$db_made" ]; then
    psql -d test -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 \
      || psql -d test -qAtc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 \
      || echo "deploy-check: could not drop database $db" >&2
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the whole run is bounded: the watchdog stops this script and what it is
# waiting for, and the trap cleans up
limit_s=${DEPLOY_CHECK_TIMEOUT:-110}
(
  sleep "$limit_s" &
  trap 'kill $! 2>/dev/null; exit 0' TERM
  wait $!
  echo "deploy-check: FAIL: still running after $limit_s s" >&2
  kill -TERM $$
  for child in $(pgrep -P $$); do
    [ "$child" = "$BASHPID" ] || kill -TERM "$child" 2>/dev/null || true
  done
) &
watchdog=$!

# --- (e, first half) the configuration on the built-in team, as deploy/Dockerfile writes it
cat src/config/default.toml deploy/switchboard.toml >"$tmp/deploy-config.toml"
agents=$("$BIN" --config "$tmp/deploy-config.toml" --database-url memory: --json agents) \
  || fail "src/config/default.toml + deploy/switchboard.toml does not load (above)"
team=$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' <<<"$agents")
builtin_team=$(
  "$BIN" --database-url memory: --json agents | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
)
[ "$team" = "$builtin_team" ] || fail "the deploy configuration has $team agents, the built-in team $builtin_team"
say "deploy/switchboard.toml on the built-in team loads: $team agents"

# --- PostgreSQL: a fresh database
psql -d test -qAtc "SELECT 1" >/dev/null 2>&1 \
  || fail "no PostgreSQL at postgres@127.0.0.1:5432/test (trust auth); .ci/run starts one"
psql -d test -qAtc "CREATE DATABASE $db" >/dev/null || fail "CREATE DATABASE $db"
db_made=1
DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"

# --- the replicas' configuration: the deploy one, with its paths in $tmp,
# a 2 s lease, a user token and an agent for gRPC calls that name none
user_token="sbu_deploycheck_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
sed -e "s#/var/lib/switchboard#$tmp#" -e 's/^replica_lease_ms = [0-9]*$/replica_lease_ms = 2000/' \
  deploy/switchboard.toml >"$tmp/deploy-tables.toml"
grep -q '^replica_lease_ms = 2000$' "$tmp/deploy-tables.toml" || fail "deploy/switchboard.toml sets no [server] replica_lease_ms"
grep -q "seal_key_file = \"$tmp/" "$tmp/deploy-tables.toml" || fail "deploy/switchboard.toml: no seal_key_file under /var/lib/switchboard"
{
  cat src/config/default.toml "$tmp/deploy-tables.toml"
  printf '\n[auth]\nuser_tokens = { deploy-check = "%s" }\n' "$user_token"
  printf '\n[a2a]\ngrpc_default_agent = "tag-ai"\n'
} >"$tmp/switchboard.toml"
sb() { "$BIN" --config "$tmp/switchboard.toml" --database-url "$DATABASE_URL" "$@"; }

free_ports() {
  python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}
read -r p1 p2 p3 http_port grpc_port <<<"$(free_ports 5)"
ports=("$p1" "$p2" "$p3")

# as compose's init service does: the schema and the first keys, once
sb keys >"$tmp/init.log" 2>&1 || fail "switchboard keys (init) failed"
sb agents >>"$tmp/init.log" 2>&1 || fail "switchboard agents (init: migrations on $DATABASE_URL) failed"
[ -s "$tmp/keys/pii-seal.key" ] && [ -s "$tmp/keys/lineage/current" ] || fail "init made no shared keys in $tmp/keys"

for i in 0 1 2; do
  # the binary itself in the background (not a function: $! must be its pid)
  "$BIN" --config "$tmp/switchboard.toml" --database-url "$DATABASE_URL" serve --addr "127.0.0.1:${ports[$i]}" \
    >"$tmp/replica-$((i + 1)).log" 2>&1 &
  pids+=($!)
done

wait_http() { # URL SECONDS
  local end=$((SECONDS + $2))
  until curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}
declare -A replica_of_port
for i in 0 1 2; do
  wait_http "http://127.0.0.1:${ports[$i]}/healthz" 30 || fail "replica $((i + 1)) did not answer /healthz within 30 s"
  id=$(curl -fsS "http://127.0.0.1:${ports[$i]}/healthz" | python3 -c 'import json, sys; print(json.load(sys.stdin)["replica"])')
  replica_of_port[${ports[$i]}]=$id
done
say "3 replicas on $DATABASE_URL: ${replica_of_port[$p1]}, ${replica_of_port[$p2]}, ${replica_of_port[$p3]}"

# --- nginx: deploy/nginx.conf as it is, but for its two listen ports, and
# an upstreams file naming the three replicas
sed -e "s/^\(\s*listen\) 8080;$/\1 127.0.0.1:$http_port;/" \
  -e "s/^\(\s*listen\) 8081 http2;$/\1 127.0.0.1:$grpc_port http2;/" deploy/nginx.conf >"$tmp/nginx.conf"
[ "$(diff deploy/nginx.conf "$tmp/nginx.conf" | grep -c '^>')" = 2 ] \
  || fail "deploy/nginx.conf: expected exactly 'listen 8080;' and 'listen 8081 http2;' to place on free ports"
for p in "${ports[@]}"; do
  echo "server 127.0.0.1:$p max_fails=3 fail_timeout=10s;"
done >"$tmp/nginx-upstreams.conf"
nginx_args=(-c "$tmp/nginx.conf" -p "$tmp/" -e stderr -g "daemon off; pid $tmp/nginx.pid;")
# Debian's nginx keeps its temporary files in /var/lib/nginx, owned by www-data
if [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1; then nginx_args[-1]+=" user www-data;"; fi
"$NGINX" -t -q "${nginx_args[@]}" 2>"$tmp/nginx-test.log" || {
  cat "$tmp/nginx-test.log" >&2
  fail "nginx -t refuses deploy/nginx.conf"
}
"$NGINX" "${nginx_args[@]}" >"$tmp/nginx-access.log" 2>"$tmp/nginx.log" &
nginx_pid=$!
NG="http://127.0.0.1:$http_port"
wait_http "$NG/healthz" 15 || fail "nginx did not answer on 127.0.0.1:$http_port"
say "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///') on 127.0.0.1:$http_port (HTTP) and :$grpc_port (gRPC)"

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
chat() { # BASE_URL -> writes the response body to stdout, fails on a non-200
  curl -fsS --max-time 20 "$1/v1/chat" -H "Authorization: Bearer $user_token" \
    -d '{"message":"Categorize this","input":"2025-10-01 Starbucks 4.50"}'
}

# --- (a) every replica answers through nginx
seen=$(for _ in $(seq 30); do curl -fsS --max-time 5 "$NG/healthz" | json_field replica; done | sort | uniq -c)
n_seen=$(wc -l <<<"$seen")
[ "$n_seen" = 3 ] || fail "(a) 30 GET /healthz through nginx saw $n_seen replicas, not 3: $(echo $seen)"
for p in "${ports[@]}"; do
  grep -qF "${replica_of_port[$p]}" <<<"$seen" || fail "(a) replica on :$p (${replica_of_port[$p]}) never answered through nginx"
done
say "(a) ok: 30 GET /healthz through nginx reached all 3 replicas ($(awk '{print $1}' <<<"$seen" | paste -sd/))"

# --- (b) a delegation through nginx; its tree from each replica directly
resp=$(chat "$NG") || fail "(b) POST /v1/chat through nginx failed"
status=$(json_field status <<<"$resp")
[ "$status" = success ] || fail "(b) the delegation through nginx ended '$status': $resp"
root=$(json_field request_id <<<"$resp")
for p in "${ports[@]}"; do
  steps=$(curl -fsS --max-time 5 "http://127.0.0.1:$p/v1/trees/$root/steps" -H "Authorization: Bearer $user_token") \
    || fail "(b) GET /v1/trees/$root/steps on replica :$p failed"
  summary=$(python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["root_id"], d["state"], ",".join(s["target"] + ":" + s["state"] for s in d["steps"]))' <<<"$steps")
  case "$summary" in
    "$root done prime-boss:done,tag-ai:done") ;;
    *) fail "(b) replica :$p sees tree $root as: $summary" ;;
  esac
done
card=$(curl -fsS --max-time 5 "$NG/a2a/tag-ai/.well-known/agent-card.json")
grep -qF "\"url\":\"http://127.0.0.1:$http_port/a2a/tag-ai\"" <<<"$card" \
  || fail "(b) the agent card through nginx does not name nginx's address (Host not passed on?): ${card:0:300}"
say "(b) ok: a delegation through nginx (prime-boss -> tag-ai) succeeded; its tree reads the same on all 3 replicas; cards name nginx"

# --- (c) SSE through nginx: an event arrives while delegations run.
# /v1/events is per replica, so one delegation runs on each replica
# directly: whichever the stream landed on sends its events through nginx.
curl -sN --max-time 3 -D "$tmp/events.headers" -o "$tmp/events.body" \
  "$NG/v1/events" -H "Authorization: Bearer $user_token" 2>/dev/null &
events_curl=$!
sleep 0.5
for p in "${ports[@]}"; do chat "http://127.0.0.1:$p" >/dev/null || fail "(c) a delegation on replica :$p failed"; done
wait "$events_curl" || true
grep -qi '^content-type: text/event-stream' "$tmp/events.headers" \
  || fail "(c) GET /v1/events through nginx is not an event stream: $(head -c 300 "$tmp/events.headers")"
grep -q '^event: started' "$tmp/events.body" \
  || fail "(c) no event came through nginx within 3 s: $(head -c 300 "$tmp/events.body")"
say "(c) ok: /v1/events streamed through nginx ($(grep -c '^event:' "$tmp/events.body") events within 3 s)"

# --- (d) SIGKILL one replica; 20 delegations through nginx all succeed
dead=${ports[1]}
kill -KILL "${pids[1]}"
wait "${pids[1]}" 2>/dev/null || true
unset 'pids[1]' # reaped: its pid may be another process's by the cleanup
ok=0
for i in $(seq 20); do
  resp=$(chat "$NG") || fail "(d) delegation $i of 20 through nginx failed after replica :$dead was killed"
  status=$(json_field status <<<"$resp")
  [ "$status" = success ] || fail "(d) delegation $i of 20 ended '$status': $resp"
  ok=$((ok + 1))
done
refused=$(grep -c "Connection refused.*127.0.0.1:$dead" "$tmp/nginx.log" || true)
[ "$refused" -ge 1 ] || fail "(d) nginx never tried the killed replica :$dead, so failover was not exercised"
say "(d) ok: replica :$dead SIGKILLed; $ok/20 delegations through nginx succeeded ($refused attempts on the dead replica passed on)"

# --- (f) gRPC through nginx's grpc_pass server (an empty GetExtendedAgentCard: tag-ai's card)
printf '\0\0\0\0\0' >"$tmp/empty.grpc"
curl -sS --http2-prior-knowledge --max-time 5 -D "$tmp/grpc.headers" -o "$tmp/grpc.body" \
  -X POST "http://127.0.0.1:$grpc_port/lf.a2a.v1.A2AService/GetExtendedAgentCard" \
  -H 'content-type: application/grpc' -H 'te: trailers' -H "authorization: Bearer $user_token" \
  -H 'a2a-version: 1.0' --data-binary @"$tmp/empty.grpc" || fail "(f) the gRPC call through nginx failed"
grep -q '^grpc-status: 0' "$tmp/grpc.headers" \
  || fail "(f) gRPC through nginx: $(tr -d '\r' <"$tmp/grpc.headers" | paste -sd' ')"
grep -qaF "http://127.0.0.1:$grpc_port/a2a/tag-ai" "$tmp/grpc.body" \
  || fail "(f) gRPC through nginx answered without tag-ai's card naming nginx's gRPC address"
say "(f) ok: A2A gRPC (h2c) through nginx's grpc_pass server answered GetExtendedAgentCard"

# --- (g) the body limit: nginx cuts where the server does (1 MiB), in the server's words
limit=1048576
head -c "$limit" /dev/zero | tr '\0' a >"$tmp/max.body"
code=$(curl -sS --max-time 10 -o "$tmp/max.resp" -w '%{http_code}' "$NG/v1/chat" \
  -H "Authorization: Bearer $user_token" --data-binary @"$tmp/max.body")
# not JSON, so the replica's own refusal: 400 INVALID_REQUEST "invalid chat request"
[ "$code" = 400 ] && grep -q '"invalid chat request' "$tmp/max.resp" \
  || fail "(g) a $limit-byte body through nginx did not reach a replica: $code $(head -c 200 "$tmp/max.resp")"
printf a >>"$tmp/max.body"
code=$(curl -sS --max-time 10 -o "$tmp/big.resp" -w '%{http_code}' "$NG/v1/chat" \
  -H "Authorization: Bearer $user_token" --data-binary @"$tmp/max.body")
[ "$code" = 413 ] && grep -q '^{"error":{"code":"INVALID_REQUEST"' "$tmp/big.resp" \
  || fail "(g) a $((limit + 1))-byte body through nginx: $code $(head -c 200 "$tmp/big.resp")"
say "(g) ok: a $limit-byte body reaches a replica through nginx, one byte more is a JSON 413"

# --- (e) the compose file and the systemd unit
if docker compose version >/dev/null 2>&1; then
  docker compose -f deploy/compose.yaml config -q || fail "(e) docker compose config refuses deploy/compose.yaml"
  compose_how="docker compose config"
elif command -v docker-compose >/dev/null 2>&1; then
  docker-compose -f deploy/compose.yaml config -q || fail "(e) docker-compose config refuses deploy/compose.yaml"
  compose_how="docker-compose config"
else
  compose_how="python3 (no docker compose here)"
fi
# whatever validated the schema, what the file must hold
python3 - deploy/compose.yaml <<'EOF' || fail "(e) deploy/compose.yaml (above)"
import os, sys
try:
    import yaml
except ImportError:
    sys.exit("python3 has no yaml module (pip install pyyaml)")
path = sys.argv[1]
c = yaml.safe_load(open(path))
s = c["services"]
here = os.path.dirname(path)
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
need(s["postgres"]["image"].startswith("postgres:15"), "postgres: image postgres:15")
need(s["nats"]["image"].startswith("nats:2.10") and "-js" in s["nats"]["command"], "nats: nats:2.10 with -js")
replicas = [n for n in s if n.startswith("replica-")]
need(len(replicas) == 3, "three replica services")
urls = {s[n]["environment"]["SWITCHBOARD_DATABASE_URL"] for n in replicas}
need(len(urls) == 1 and next(iter(urls)).startswith("postgres://"), "the replicas on one PostgreSQL database")
for n in replicas:
    need(s[n]["command"][0] == "serve", f"{n}: command serve")
    need(any(v.startswith("keys:") for v in s[n]["volumes"]), f"{n}: the shared keys volume")
workers = [n for n in s if n.startswith("worker-")]
need(len(workers) == 2, "two worker services")
for n in workers:
    need(s[n]["command"][0] == "worker", f"{n}: command worker")
mounts = s["nginx"]["volumes"]
for f in ("nginx.conf", "nginx-upstreams.conf"):
    need(any(m.startswith("./" + f + ":") for m in mounts), f"nginx mounts ./{f}")
    need(os.path.exists(os.path.join(here, f)), f"deploy/{f} exists")
for n, svc in s.items():
    for dep in svc.get("depends_on", {}):
        need(dep in s, f"{n} depends on an unknown service {dep}")
    for v in svc.get("volumes", []):
        src = v.split(":")[0]
        if not src.startswith((".", "/")):
            need(src in (c.get("volumes") or {}), f"{n}: volume {src} is not declared")
build = s["replica-1"]["build"]
need(os.path.exists(os.path.join(here, build["context"], build["dockerfile"])), "the build's Dockerfile exists")
if problems:
    sys.exit("deploy/compose.yaml: " + "; ".join(problems))
EOF
say "(e) ok: deploy/compose.yaml validates ($compose_how, and its services checked)"
if command -v systemd-analyze >/dev/null 2>&1; then
  # the unit as written, but for where the binary is here
  sed "s#^ExecStart=/usr/local/bin/switchboard #ExecStart=$BIN #" deploy/switchboard.service >"$tmp/switchboard.service"
  grep -q "^ExecStart=$BIN " "$tmp/switchboard.service" || fail "(e) deploy/switchboard.service: no ExecStart=/usr/local/bin/switchboard …"
  out=$(systemd-analyze verify "$tmp/switchboard.service" 2>&1) && [ -z "$out" ] \
    || fail "(e) systemd-analyze verify deploy/switchboard.service: $out"
  say "(e) ok: deploy/switchboard.service verifies (systemd-analyze verify, no warnings)"
else
  say "(e) deploy/switchboard.service NOT verified: no systemd-analyze here"
fi

say "passed in $(($(date +%s) - started)) s: nginx over 3 replicas on PostgreSQL (health spread, a tree read everywhere, SSE, failover after SIGKILL, gRPC, body limit); compose file and systemd unit checked"
