-- The newer keybench form: a sweep over batch itself.
local keys = {}
local function run(ctx)
  for i = 1, ctx.batch do keys[i] = "k" .. i end
  for i = #keys, ctx.batch + 1, -1 do keys[i] = nil end
  kv.mget(keys)
end
return { name = "batchsweep", run = run, sweep = { param = "batch", values = { 2, 5 } } }
