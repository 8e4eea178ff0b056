-- A sweep without seed_per_value whose dataset depends on the value (as keybench's
-- valsize.lua): run() fails when it reads a value loaded for another sweep value.
local function load(ctx)
  if ctx.thread == 0 then
    io.stderr:write("load size=" .. ctx.size .. "\n")
    kv.put("k", string.rep("x", ctx.size))
  end
end
local function run(ctx)
  local v = kv.get("k")
  if v == nil or #v ~= ctx.size then
    error("value of " .. tostring(v and #v) .. " bytes under size=" .. ctx.size)
  end
end
return { name = "sweep_unset", load = load, run = run,
  sweep = { param = "size", values = { 8, 64 } } }
