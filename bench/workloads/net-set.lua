-- net-set: redis-benchmark's SET test as a workload. Keys are "key:" and a
-- 12-digit number below ctx.items (redis-benchmark -r's key:__rand_int__); values
-- are 100 bytes (-d 100). No load: SET needs none.

local VALUE = string.rep("x", 100)
local put, random, format = kv.put, math.random, string.format

return {
  name = "net-set",
  run = function(ctx) put(format("key:%012d", random(0, ctx.items - 1)), VALUE) end,
}
