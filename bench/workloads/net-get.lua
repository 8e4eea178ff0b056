-- net-get: redis-benchmark's GET test as a workload, on a store loaded with every
-- key "key:" + 12 digits below ctx.items and a 100-byte value (as redis-benchmark's
-- SET test leaves it). At --batch B > 1 each unit is one kv.mget of B random keys:
-- B GETs in one round trip, as redis-benchmark -P B pipelines them.

local VALUE = string.rep("x", 100)
local get, mget, random, format = kv.get, kv.mget, math.random, string.format
local keys = {}

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = format("key:%012d", i), val = VALUE }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local function run(ctx)
  local n = ctx.items - 1
  if ctx.batch == 1 then
    get(format("key:%012d", random(0, n)))
  else
    for j = 1, ctx.batch do keys[j] = format("key:%012d", random(0, n)) end
    mget(keys)
  end
end

return { name = "net-get", batched = true, load = load, run = run }
