-- Reports whether an earlier point's writes are visible: they are only when the
-- store is shared (--seed-once).
local function load(ctx)
  if ctx.thread == 0 then kv.put("seeded", "1") end
end
local function run(ctx)
  if ctx.thread == 0 and ctx.iter == 1 then
    io.stderr:write(string.format("threads=%d seeded=%s ran_before=%s\n", ctx.threads,
      tostring(kv.get("seeded") ~= nil), tostring(kv.get("ran") ~= nil)))
    kv.put("ran", "1")
  end
end
return { name = "seedonce", load = load, run = run }
