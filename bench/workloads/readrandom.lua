-- readrandom: gets of uniformly random keys from a store seeded with every key of
-- ctx.items (16-byte keys, 4 KiB values, in write batches of 256 per loader
-- thread), db_bench style. The harness-overhead benchmark runs the same loop bare in
-- benches/rocksdb_overhead.rs.

local VALUE_BYTES = 4096

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + VALUE_BYTES)

local fmt, random = string.format, math.random

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    local off = random(1, 65536)
    batch[#batch + 1] = { key = fmt("k:%014d", i), val = NOISE:sub(off, off + VALUE_BYTES - 1) }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local get = kv.get

local function run(ctx)
  get(fmt("k:%014d", random(0, ctx.items - 1)))
end

return { name = "readrandom", load = load, run = run }
