-- wrk script: every request a new checkout (a distinct command id per request and
-- thread), authorized with the token in the TOKEN environment variable.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
  wrk.headers["Content-Type"] = "application/json"
end

request = function()
  counter = counter + 1
  local id = string.format("%08x-%04x-4000-8000-%012x", os.getenv("RUN_TAG") + 0, tid, counter)
  local body = '{"commandId":"' .. id .. '","payload":{"amount":1250,"currency":"eur"}}'
  return wrk.format("POST", "/v1/checkouts", nil, body)
end

local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%d seconds=%.3f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f non2xx=%d errors=%d\n",
    summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3, latency:percentile(99) / 1e3,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
