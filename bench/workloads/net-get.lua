-- net-get: redis-benchmark's GET test as a workload, on a store loaded with every
-- key "key:" + 12 digits below ctx.items and a 100-byte value (as redis-benchmark's
-- SET test leaves it). At --batch B > 1 each unit is one kv.mget of B random keys:
-- B GETs in one round trip, as redis-benchmark -P B pipelines them.
--
-- Below a million (every key of the bench), a key is a constant prefix and two 3-digit
-- groups looked up in a table, one concatenation: string.format cost the client more
-- than the rest of the unit's Lua. Larger numbers go through string.format.

local VALUE = string.rep("x", 100)
local get, mget, random, format = kv.get, kv.mget, math.random, string.format
local D3, DIGITS = {}, { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9" }
for i = 0, 999 do
  D3[i + 1] = DIGITS[i // 100 + 1] .. DIGITS[i // 10 % 10 + 1] .. DIGITS[i % 10 + 1]
end
local keys = {}

local function key(n)
  if n < 1000000 then return "key:000000" .. D3[n // 1000 + 1] .. D3[n % 1000 + 1] end
  return format("key:%012d", n)
end

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = key(i), val = VALUE }
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
    local k = random(0, n)
    if k < 1000000 then
      get("key:000000" .. D3[k // 1000 + 1] .. D3[k % 1000 + 1])
    else
      get(format("key:%012d", k))
    end
  else
    for j = 1, ctx.batch do keys[j] = key(random(0, n)) end
    mget(keys)
  end
end

return { name = "net-get", batched = true, load = load, run = run }
