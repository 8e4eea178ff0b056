-- Declares its own sweep; prints the value it sees.
local function load(ctx)
  if ctx.thread == 0 then io.stderr:write("load size=" .. ctx.size .. "\n") end
end
local function run(ctx)
  if ctx.iter == 1 then io.stderr:write("run size=" .. ctx.size .. "\n") end
  kv.put("k", string.rep("x", ctx.size))
end
return { name = "sweep", load = load, run = run,
  sweep = { param = "size", values = { 8, 64 }, seed_per_value = true } }
