-- getvalue: the cost of handing a read value to Lua. One key holds a value of
-- VALUE_BYTES bytes (environment variable, default 4096); every unit gets it. On
-- `skiplist` the engine's part is small, so the unit's cost is mostly the copy of the
-- value into a new Lua string (see docs/benchmarks-history.md, "Values handed to Lua").

local VALUE_BYTES = tonumber(os.getenv("VALUE_BYTES") or "4096")
local KEY = "k:00000000000001"

local function load(ctx)
  if ctx.thread == 0 then kv.put(KEY, string.rep("v", VALUE_BYTES)) end
end

local get = kv.get

local function run()
  get(KEY)
end

return { name = "getvalue", load = load, run = run }
