-- wrk script for scripts/bench.sh: one fresh request per call, and a JSON
-- summary line at the end. BENCH_KIND picks the request:
--   delegate  POST /v1/delegate, a native envelope (Switchboard, bare axum)
--   a2a       POST <path>, a JSON-RPC SendMessage (A2A 1.0 servers)
-- BENCH_TOKEN is the bearer token (none when empty), BENCH_TARGET the agent
-- of a native envelope; BENCH_KEYED=1 gives each native envelope an
-- idempotency key of its own, as the hop to a remote agent carries.
-- BENCH_IDS=v7 makes a native envelope's request id time-ordered (the
-- layout of a UUID v7: the time first, here the second and a per-thread
-- count, then random bits) instead of random (v4, the default), as a
-- caller that mints v7 ids sends them (scripts/bench/log_pages.py --ids v7).

local kind = os.getenv("BENCH_KIND") or "delegate"
local token = os.getenv("BENCH_TOKEN") or ""
local target = os.getenv("BENCH_TARGET") or "echo"
local keyed = os.getenv("BENCH_KEYED") == "1"
local ordered = os.getenv("BENCH_IDS") == "v7"
local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
end

local function hex(n)
  local out = {}
  for i = 1, n do out[i] = string.format("%x", math.random(0, 15)) end
  return table.concat(out)
end

local function uuid()
  return hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" .. string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(12)
end

-- a time-ordered id: 32 bits of seconds and 16 of this thread's count, then random bits
local function uuid_v7()
  local t = string.format("%08x%04x", os.time(), counter % 65536)
  return t:sub(1, 8) .. "-" .. t:sub(9, 12) .. "-7" .. hex(3) .. "-" .. string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(12)
end

function request()
  counter = counter + 1
  local headers = { ["Content-Type"] = "application/json" }
  if token ~= "" then headers["Authorization"] = "Bearer " .. token end
  local body
  if kind == "a2a" then
    headers["A2A-Version"] = "1.0"
    body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":{"messageId":"'
      .. uuid() .. '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
    return wrk.format("POST", wrk.path, headers, body)
  end
  local id = ordered and uuid_v7() or uuid()
  headers["X-Agent-Request-ID"] = id
  headers["X-Agent-Origin"] = "prime-boss"
  body = '{"request_id":"' .. id .. '","origin_employee":"prime-boss","target_employee":"' .. target
    .. '","user_id":"bench","objective":"Echo the input","input":"hello"'
    .. (keyed and (',"idempotency_key":"hop-' .. id .. '"') or "") .. '}'
  return wrk.format("POST", "/v1/delegate", headers, body)
end

-- A2A answers errors with 200 and a JSON-RPC error: count them too (only
-- in a 2xx: a refusal such as a 503 over the admission limit also carries a
-- JSON-RPC error, and wrk counts it among the non-2xx already).
rpc_errors = 0
if kind == "a2a" then
  function response(status, headers, body)
    if status >= 200 and status < 300 and body and body:find('"error":', 1, true) then
      rpc_errors = rpc_errors + 1
    end
  end
end

function done(summary, latency, requests)
  local rpc = 0
  for _, t in ipairs(threads) do rpc = rpc + (t:get("rpc_errors") or 0) end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p99_us":%d,"max_us":%d,"non_2xx":%d,"rpc_errors":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max, e.status, rpc,
    e.connect + e.read + e.write + e.timeout))
end
