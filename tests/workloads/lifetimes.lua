-- Every unit inserts a fresh key that lives LIFETIME seconds. Every 300th unit counts
-- the live keys with a scan and prints the count, so a test can check the live set
-- against rate x lifetime.
local LIFETIME = 2

local function run(ctx)
  local key = string.format("life:%02d:%012d", ctx.thread, ctx.iter)
  kv.put(key, "v")
  kv.expire_after(key, LIFETIME)
  if ctx.iter % 300 == 0 then
    local live = kv.scan("life:", "life;", function() end)
    io.stderr:write(string.format("iter %d live %d\n", ctx.iter, live))
  end
end

return { name = "lifetimes", run = run }
