-- load() puts ctx.items keys; then every unit deletes one of them that nothing
-- deletes, writes or reads again (once they are all gone, a unit puts a key of its
-- own), so under --verify only the final pass reads them: each delete the engine
-- acknowledged but skipped is exactly one resurrected_delete (tests/verify.rs).

local VALUE = string.rep("v", 48)

local function key(i)
  return string.format("d%06d", i)
end

local function load(ctx)
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    kv.put(key(i), VALUE)
  end
end

local function run(ctx)
  local i = ctx.thread + (ctx.iter - 1) * ctx.threads
  if i < ctx.items then
    kv.del(key(i))
  else
    kv.put(string.format("w%d-%08d", ctx.thread, ctx.iter), VALUE)
  end
end

return { name = "delete_once", load = load, run = run }
