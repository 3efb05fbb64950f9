-- wrk script for bench/bench_serve.sh: POSTs JSON bodies read from BODIES (one per line),
-- round-robin per connection, and prints one JSON line with throughput, latency percentiles and
-- errors (non-2xx answers and socket errors).
local bodies = {}
local file = assert(io.open(os.getenv("BODIES"), "r"))
for line in file:lines() do
  if #line > 0 then bodies[#bodies + 1] = line end
end
file:close()
local counter = 0
local non2xx = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  i = id * 7919
  bad = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  i = i + 1
  return wrk.format(nil, nil, nil, bodies[(i % #bodies) + 1])
end

function response(status, headers, body)
  if status < 200 or status >= 300 then bad = bad + 1 end
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    '{"requests": %d, "seconds": %.2f, "qps": %.1f, "p50_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f, "socket_errors": %d, "non_2xx": %d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000, errors, summary.errors.status))
end
