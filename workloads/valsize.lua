-- valsize: the mixed blend (50% get, 30% put, 10% del, 10% short range) at several
-- value sizes. The workload declares its own sweep: each size is a separate point,
-- reported as valuebytes=<size>, and under --seed-once each size gets its own seeded
-- store (seed_per_value), since the dataset depends on it.

local RANGE_ROWS = 10
local MAX_VALUE = 65536

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + MAX_VALUE)

local function value(size)
  local off = math.random(1, 65536)
  return NOISE:sub(off, off + size - 1)
end

local function key(i)
  return string.format("k:%012d", i)
end

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = key(i), val = value(ctx.valuebytes) }
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
    kv.put(key(i), value(ctx.valuebytes))
  elseif r <= 90 then
    kv.del(key(i))
  else
    kv.range(key(i), key(i + RANGE_ROWS), RANGE_ROWS)
  end
end

return {
  name = "valsize",
  load = load,
  run = run,
  sweep = { param = "valuebytes", values = { 256, 4096, 65536 }, seed_per_value = true },
}
