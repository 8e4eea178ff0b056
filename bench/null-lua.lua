-- The Lua twin of bench/null-spec.json: each unit is one kv.get of a random key on an
-- empty store (so always absent), "kvmark:null:" + 12 random digits. Run it with
-- --ops 20000000 on one thread.

local get = kv.get
local random, format = math.random, string.format

return {
  name = "null-lua",
  run = function() get(format("kvmark:null:%012d", random(0, 999999999999))) end,
}
