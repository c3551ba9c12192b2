-- Shared by the wrk scripts of bench/conversions.sh: the seed file, per-thread non-2xx counts and the
-- RESULT line the shell script parses. A script loads it with dofile and defines only request().
local seed_file = os.getenv("BENCH_SEED") or "bench/.seed"
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

-- Per thread: token, run id, number of seeded customers, then the seeded click ids.
function init(args)
  non2xx = 0
  counter = 0
  clicks = {}
  local f = assert(io.open(seed_file, "r"))
  token = f:read("*l")
  run = f:read("*l")
  existing = tonumber(f:read("*l"))
  for line in f:lines() do clicks[#clicks + 1] = line end
  f:close()
  math.randomseed(os.time() + thread_id * 7919)
  headers = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if non2xx <= 3 then io.stderr:write("non-2xx " .. status .. ": " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + thread:get("non2xx") end
  local errors = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d seconds=%.1f rps=%.0f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f non2xx=%d socket_errors=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    bad, errors.connect + errors.read + errors.write + errors.timeout))
end
