-- POST /orders for wrk (deploy/benchmarks: Wrk.java), the load generator of the saturation runs: it costs a
-- fraction of the Java client's CPU per order, so that more of the machine is left to the system measured.
--   wrk -t1 -c32 -d30s -s orders.lua http://localhost:8081 -- <run> <sku>,<sku>,...
-- Every order has the customer id <run> (the harness reads the accepted orders back from order-service's
-- database by it) and its own Idempotency-Key, as a careful client sends: <run>-<thread>-<n>. Its lines are
-- OrderLoad's mix: one to three distinct SKUs of the catalogue given (OrderLoad.SKUS), 1-5 of each, drawn
-- from a generator seeded per thread. A request wrk had in flight when the time ran out may have placed its order unanswered:
-- the database, not this count, says which orders exist.
-- At the end it prints its counts on a line of its own ("wrk-result ..."), which Wrk.java reads.
-- Paced (the latency runs): with ORDERS_PER_SECOND=<rate> in its environment, requests leave at that rate in all,
-- open loop, their gaps drawn from an exponential distribution (Poisson arrivals, as independent clients send):
-- each request waits for its slot on one schedule, whichever connection is free, so a slow answer does not slow
-- the rate as long as a connection is free (32 of them at ~400/s and answers of tens of ms leave many free).
-- One schedule per wrk thread: run it with -t1 (Wrk.java does), or each thread sends at the whole rate.

local skus = {}
local threads = {}

function setup(thread)
    thread:set("thread_number", #threads + 1)
    table.insert(threads, thread)
end

local paced = tonumber(os.getenv("ORDERS_PER_SECOND") or "")
if paced and paced <= 0 then
    error("ORDERS_PER_SECOND must be above 0, not " .. paced)
end
if paced then
    local ffi = require("ffi")
    ffi.cdef[[
        typedef struct { long tv_sec; long tv_nsec; } orders_lua_timespec;
        int clock_gettime(int clock_id, orders_lua_timespec *tp);
    ]]
    local now = ffi.new("orders_lua_timespec")
    local function monotonic_ms()
        ffi.C.clock_gettime(1, now) -- CLOCK_MONOTONIC
        return tonumber(now.tv_sec) * 1000 + tonumber(now.tv_nsec) / 1e6
    end
    local slot = nil
    -- wrk asks before each request how many ms to wait: until the next slot of the schedule.
    function delay()
        local at = monotonic_ms()
        slot = (slot or at) - math.log(1 - math.random()) * 1000 / paced
        return math.max(0, slot - at)
    end
end

function init(args)
    run = args[1]
    for sku in string.gmatch(args[2] or "", "[^,]+") do
        skus[#skus + 1] = sku
    end
    if run == nil or run == "" or #skus == 0 then
        error("usage: wrk ... -s orders.lua <url> -- <run> <sku>,<sku>,...")
    end
    sent, created, other = 0, 0, 0
    math.randomseed(thread_number)
end

function request()
    sent = sent + 1
    local count = math.min(math.random(3), #skus)
    local lines = {}
    for i = 1, count do
        -- A partial shuffle: the i-th line takes one of the SKUs not taken yet (one line per SKU, as an order must).
        local j = math.random(i, #skus)
        skus[i], skus[j] = skus[j], skus[i]
        lines[#lines + 1] = string.format('{"sku":"%s","quantity":%d}', skus[i], math.random(5))
    end
    local body = string.format('{"customerId":"%s","lines":[%s]}', run, table.concat(lines, ","))
    return wrk.format("POST", "/orders", {
        ["Content-Type"] = "application/json",
        ["Idempotency-Key"] = run .. "-" .. thread_number .. "-" .. sent,
    }, body)
end

function response(status, headers, body)
    if status == 201 then
        created = created + 1
    else
        other = other + 1
        if other <= 3 then
            io.stderr:write("wrk: POST /orders answered " .. status .. ": " .. body .. "\n")
        end
    end
end

function done(summary, latency, requests)
    local created_total, other_total = 0, 0
    for _, thread in ipairs(threads) do
        created_total = created_total + thread:get("created")
        other_total = other_total + thread:get("other")
    end
    io.write(string.format("wrk-result created=%d other=%d socket_errors=%d duration_us=%d p50_us=%d p99_us=%d\n",
        created_total, other_total,
        summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        summary.duration, latency:percentile(50), latency:percentile(99)))
end
