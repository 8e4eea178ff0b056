-- ivs: YCSB-IVS's record layout and YCSB A's mix, for growing-value runs
-- (kvmark --epochs N workloads/ivs.lua; see "Growing values" in the README).
-- ctx.items records of 1000 bytes (the paper's 10 fields of 100 bytes); each unit
-- reads or updates one record chosen uniformly, 50/50. In an epoch's run phase an
-- update writes a value whose length kv.value_size() draws from the store's value
-- sizes at the end of the epoch's extend phase, so the run does not shift them.

local VALUE_BYTES = 1000
local MAX_NOISE = 1 << 20

-- Random bytes, built once per Lua state (outside any timed call); values are slices.
local parts = {}
for i = 1, 4096 do parts[i] = string.char(math.random(0, 255)) end
local CHUNK = table.concat(parts)
local NOISE = string.rep(CHUNK, MAX_NOISE // #CHUNK)

local function value(n)
  if n > #NOISE then return string.rep("v", n) end
  local off = math.random(1, #NOISE - n + 1)
  return NOISE:sub(off, off + n - 1)
end

local function key(i)
  return string.format("user%012d", i)
end

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = key(i), val = value(VALUE_BYTES) }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local function run(ctx)
  local k = key(math.random(0, ctx.items - 1))
  if math.random() < 0.5 then
    kv.get(k)
  else
    kv.put(k, value(kv.value_size() or VALUE_BYTES))
  end
end

return { name = "ivs", load = load, run = run }
