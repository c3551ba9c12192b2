-- GET /l/<key> over the seeded links (bench/redirect.sh), with the user agents of real traffic: mostly
-- a few browsers, some previews and bots. Counts answers other than the redirect expected (non3xx): lftrack's
-- 302, or BENCH_EXPECT_STATUS for a peer (YOURLS: 301, and a 302 from it means an unknown keyword).
-- BENCH_PATH_PREFIX: the path before the key ("/l/" for lftrack, "/" for YOURLS).
local seed_file = os.getenv("BENCH_SEED") or "bench/.seed"
local prefix = os.getenv("BENCH_PATH_PREFIX") or "/l/"
local expected = tonumber(os.getenv("BENCH_EXPECT_STATUS") or "302")
local threads = {}
local next_id = 0
local agents = {
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
  "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
  "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
  "Twitterbot/1.0",
}
local referrers = {"https://t.co/abc", "https://www.facebook.com/", "https://news.ycombinator.com/item?id=1", ""}

function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  non3xx = 0
  keys = {}
  local f = assert(io.open(seed_file, "r"))
  for line in f:lines() do keys[#keys + 1] = line end
  f:close()
  math.randomseed(os.time() + thread_id * 7919)
end

function request()
  local headers = {["User-Agent"] = agents[math.random(#agents)], ["X-Forwarded-For"] = "198.51.100." .. math.random(250)}
  local referrer = referrers[math.random(#referrers)]
  if referrer ~= "" then headers["Referer"] = referrer end
  return wrk.format("GET", prefix .. keys[math.random(#keys)], headers)
end

function response(status, headers, body)
  if status ~= expected then
    non3xx = non3xx + 1
    if non3xx <= 3 then io.stderr:write("not " .. expected .. ": " .. status .. ": " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + thread:get("non3xx") end
  local errors = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d seconds=%.1f rps=%.0f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f non3xx=%d socket_errors=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    bad, errors.connect + errors.read + errors.write + errors.timeout))
end
