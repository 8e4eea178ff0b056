-- net-set: redis-benchmark's SET test as a workload. Keys are "key:" and a
-- 12-digit number below ctx.items (redis-benchmark -r's key:__rand_int__); values
-- are 100 bytes (-d 100). No load: SET needs none.
--
-- Below a million (every key of the bench), a key is a constant prefix and two 3-digit
-- groups looked up in a table, one concatenation: string.format cost the client more
-- than the rest of the unit's Lua. Larger numbers go through string.format.

local VALUE = string.rep("x", 100)
local put, random, format = kv.put, math.random, string.format
local D3, DIGITS = {}, { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9" }
for i = 0, 999 do
  D3[i + 1] = DIGITS[i // 100 + 1] .. DIGITS[i // 10 % 10 + 1] .. DIGITS[i % 10 + 1]
end

return {
  name = "net-set",
  run = function(ctx)
    local n = random(0, ctx.items - 1)
    if n < 1000000 then
      put("key:000000" .. D3[n // 1000 + 1] .. D3[n % 1000 + 1], VALUE)
    else
      put(format("key:%012d", n), VALUE)
    end
  end,
}
