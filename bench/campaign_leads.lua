-- wrk script for `BENCH_ENDPOINT=campaign_leads bash bench/conversions.sh`: POST
-- /api/v1/campaigns/bench/leads. Even requests enroll a new person (outcome created); odd ones a
-- seeded contact, in other letter case (reused the first time, already_enrolled after). Counts non-2xx.
dofile("bench/wrk_common.lua")

function request()
  counter = counter + 1
  local body
  if counter % 2 == 0 then
    local n = string.format("%s-%d-%d", run, thread_id, counter)
    body = string.format('{"email": "lead-%s@example.com", "name": "Lead %s", "external_id": "lead-%s"}', n, n, n)
  else
    body = string.format('{"email": "Seeded-%d@Example.com", "name": "Seeded again"}', math.random(existing))
  end
  return wrk.format("POST", "/api/v1/campaigns/bench/leads", headers, body)
end
