-- wrk script for bench/conversions.sh: POST /api/v1/conversions with a unique customer per request.
-- Even requests name a new person (a new customer is created); odd ones name one of the seeded
-- customers (matched by email). Leads and sales alternate. Counts non-2xx answers per thread.
dofile("bench/wrk_common.lua")

function request()
  counter = counter + 1
  local click = clicks[math.random(#clicks)]
  local customer
  if counter % 2 == 0 then
    local n = string.format("%s-%d-%d", run, thread_id, counter)
    customer = string.format('{"email": "new-%s@example.com", "external_id": "ext-%s", "name": "New %s"}', n, n, n)
  else
    local i = math.random(existing)
    customer = string.format('{"email": "Seeded-%d@Example.com", "name": "Someone else"}', i)
  end
  local body
  if counter % 4 < 2 then
    body = string.format('{"event": "sale", "click_id": "%s", "value_cents": %d, "event_name": "Annual plan", "customer": %s, "meta": {"order": "%d-%d"}}',
      click, 1000 + counter, customer, thread_id, counter)
  else
    body = string.format('{"event": "lead", "click_id": "%s", "event_name": "Signup", "customer": %s}', click, customer)
  end
  return wrk.format("POST", "/api/v1/conversions", headers, body)
end
