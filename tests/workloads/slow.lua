-- Busy units for time-bounded and Ctrl-C tests.
local function run(ctx)
  local x = 0
  for i = 1, 2000 do x = x + i end
  kv.get("k")
end
return { name = "slow", run = run }
