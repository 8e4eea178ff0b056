-- net-pgput: upserts of a 100-byte value by an 8-byte big-endian key (the bytes
-- PostgreSQL's int8send gives), on a store loaded with every key below ctx.items (so
-- each upsert updates a row): the same rows and upsert the pgbench side of
-- bench/pgpipeline.sh runs.

local VALUE = string.rep("x", 100)
local put, random, pack = kv.put, math.random, string.pack

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
  name = "net-pgput",
  load = load,
  run = function(ctx) put(pack(">i8", random(0, ctx.items - 1)), VALUE) end,
}
