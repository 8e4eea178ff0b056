-- ctx.iter first looked at in the third unit, through a helper or through pairs, then
-- assigned: every look must see the 1-based count of run calls.
local function iter_of(c) return c.iter end
local calls = 0

return {
  name = "iterlazy",
  run = function(ctx)
    calls = calls + 1
    if calls < 3 then return end -- units 1 and 2 never look at ctx.iter
    local raw = rawget(ctx, "iter")
    if calls == 3 and raw ~= nil then error("iter stored before anyone looked") end
    if calls > 3 and raw ~= calls then error("stale raw iter " .. tostring(raw)) end
    local seen
    if calls == 3 and ctx.seed % 2 == 1 then
      for k, v in pairs(ctx) do if k == "iter" then seen = v end end
    else
      seen = iter_of(ctx)
    end
    local via_pairs
    for k, v in pairs(ctx) do if k == "iter" then via_pairs = v end end
    io.stderr:write(string.format("unit iter=%d pairs=%s raw=%s missing=%s\n", seen,
      tostring(via_pairs), tostring(rawget(ctx, "iter")), tostring(ctx.nothing)))
    -- Assigning it is allowed; the next unit sees the count again.
    ctx.iter = -1
    if ctx.iter ~= -1 then error("assignment lost") end
    -- The metatable is kvmark's and stays so.
    if pcall(setmetatable, ctx, {}) then error("ctx metatable replaced") end
  end,
}
