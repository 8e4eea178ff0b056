-- null: the harness's own cost. Each unit is one kv.get of a constant key that is
-- never present, on an empty store: what remains is the Lua call, the Lua-to-Rust
-- bridge, two clock reads, a histogram record, and one skip-list probe.

local get = kv.get
local KEY = "kvmark:null:missing"

return {
  name = "null",
  run = function(ctx) get(KEY) end,
}
