-- fillrandom: puts of uniformly random keys into an empty store, db_bench style:
-- 16-byte keys ("k:" and 14 digits) over ctx.items, 4 KiB values cut from a
-- random buffer at random offsets (so they do not compress). The harness-overhead
-- benchmark runs the same loop bare in benches/rocksdb_overhead.rs.

local VALUE_BYTES = 4096

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + VALUE_BYTES)

local fmt, random, put = string.format, math.random, kv.put

local function run(ctx)
  local off = random(1, 65536)
  put(fmt("k:%014d", random(0, ctx.items - 1)), NOISE:sub(off, off + VALUE_BYTES - 1))
end

return { name = "fillrandom", run = run }
