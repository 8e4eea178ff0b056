-- segment_keys: the load writes base keys sharded by ctx.thread; each run unit
-- inserts a key only its own thread writes (t<thread>:<random>) or reads a base key.
-- A store's final keys then depend only on which global threads ran and their random
-- streams, so N segments' stores together hold exactly one process's keys.

local function load(ctx)
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    kv.put(string.format("base:%08d", i), "v")
  end
end

local function run(ctx)
  if math.random(100) <= 60 then
    kv.put(string.format("t%03d:%010d", ctx.thread, math.random(0, 999999999)), "x")
  else
    kv.get(string.format("base:%08d", math.random(0, ctx.items - 1)))
  end
end

return { name = "segment_keys", load = load, run = run }
