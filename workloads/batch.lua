-- batch: the multi-key verbs. Each unit is one kv.mget (60%) or kv.mput (40%) of
-- ctx.batch random keys, so sweeping --batch traces the amortisation curve: ops/s
-- rises with the batch size while wu/s falls. ctx.items is the keyspace.

local VALUE_BYTES = 4096

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + VALUE_BYTES)

local function value()
  local off = math.random(1, 65536)
  return NOISE:sub(off, off + VALUE_BYTES - 1)
end

local function key(i)
  return string.format("k:%012d", i)
end

local function load(ctx)
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

-- Reused between units so the workload itself does not allocate a table per call.
local keys, pairs_ = {}, {}

local function run(ctx)
  local n = ctx.batch
  if math.random(100) <= 60 then
    for i = 1, n do keys[i] = key(math.random(0, ctx.items - 1)) end
    for i = #keys, n + 1, -1 do keys[i] = nil end
    kv.mget(keys)
  else
    for i = 1, n do
      local p = pairs_[i]
      if not p then p = {}; pairs_[i] = p end
      p.key = key(math.random(0, ctx.items - 1))
      p.val = value()
    end
    for i = #pairs_, n + 1, -1 do pairs_[i] = nil end
    kv.mput(pairs_)
  end
end

return { name = "batch", load = load, run = run, batched = true }
