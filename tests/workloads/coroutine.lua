-- The kv verbs from inside coroutines: one made when the file loads, one per unit, and
-- one nested in another. Each finds its worker's store (the same store the main code
-- sees), whatever thread of the Lua state it runs on.
local made_at_load = coroutine.wrap(function()
  while true do
    local k = coroutine.yield()
    assert(kv.put(k, "from-load-coroutine"))
  end
end)
made_at_load()

local function check(ctx)
  local k = "co:" .. ctx.thread .. ":" .. ctx.iter
  made_at_load(k)
  assert(kv.get(k) == "from-load-coroutine", "coroutine made at load")
  local co = coroutine.create(function()
    assert(kv.put(k, "from-unit-coroutine"))
    local inner = coroutine.wrap(function() return kv.get(k) end)
    coroutine.yield(inner())
    return kv.del(k)
  end)
  local ok, v = coroutine.resume(co)
  assert(ok and v == "from-unit-coroutine", "nested coroutine: " .. tostring(v))
  local ok2, deleted = coroutine.resume(co)
  assert(ok2 and deleted == true, "del from a coroutine")
  assert(kv.get(k) == nil, "the main code sees the coroutines' writes")
  -- A bad argument from a coroutine is still a clear error there.
  local bad = coroutine.wrap(function() return pcall(kv.get, {}) end)
  local okb, err = bad()
  assert(not okb and err:find("key must be a string, got table"), tostring(err))
end

return {
  name = "coroutine",
  load = function(ctx) check(ctx) end,
  run = check,
}
