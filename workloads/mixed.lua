-- mixed: a uniform random blend over the whole keyspace.
-- 50% get, 30% put, 10% del, 10% short range (up to 10 rows); on an engine that keeps
-- no key order (ctx.ordered false: memcached), an mget of the same 10 keys instead.
-- ctx.items is the keyspace; load seeds every key with a 4 KiB value.
-- Values are slices of a random buffer at random offsets, so they neither repeat
-- nor compress (engines with compression see realistic data).

local VALUE_BYTES = 4096
local RANGE_ROWS = 10

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end

-- 64 KiB of noise, built once per Lua state (outside any timed call).
local NOISE = random_buffer(65536 + VALUE_BYTES)

local function value()
  local off = math.random(1, 65536)
  return NOISE:sub(off, off + VALUE_BYTES - 1)
end

local function key(i)
  return string.format("k:%012d", i)
end

local function load(ctx)
  -- Each loader thread seeds its own shard, in batches of up to 256 keys.
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = key(i), val = value() }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local function run(ctx)
  local r = math.random(100)
  local i = math.random(0, ctx.items - 1)
  if r <= 50 then
    kv.get(key(i))
  elseif r <= 80 then
    kv.put(key(i), value())
  elseif r <= 90 then
    kv.del(key(i))
  elseif ctx.ordered then
    kv.range(key(i), key(i + RANGE_ROWS), RANGE_ROWS)
  else
    local keys = {}
    for j = 1, RANGE_ROWS do keys[j] = key(i + j - 1) end
    kv.mget(keys)
  end
end

return { name = "mixed", load = load, run = run }
