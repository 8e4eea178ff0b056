-- net-pgread: point reads of a 100-byte value by an 8-byte big-endian key (the bytes
-- PostgreSQL's int8send gives), on a store loaded with every key below ctx.items:
-- the same rows and SELECT the pgbench side of bench/network.sh runs.

local VALUE = string.rep("x", 100)
local get, random, pack = kv.get, math.random, string.pack

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    batch[#batch + 1] = { key = pack(">i8", i), val = VALUE }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

return {
  name = "net-pgread",
  load = load,
  run = function(ctx) get(pack(">i8", random(0, ctx.items - 1))) end,
}
