-- Every verb kvmark checks under --verify, threads sharing one keyspace: gets,
-- puts, deletes, batches, ranges and scans (mgets where the engine keeps no key
-- order: ctx.ordered is false), and appends (each thread appends to keys of
-- its own, since engines whose appends are a read then a write may lose concurrent
-- appends by contract). Values are 48 bytes and suffixes 24, both above the 20-byte
-- verify tag.

local VALUE = string.rep("v", 48)
local SUFFIX = string.rep("s", 24)

local function key(i)
  return string.format("k%06d", i)
end

local function load(ctx)
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    kv.put(key(i), VALUE)
  end
end

local function run(ctx)
  local r = math.random(100)
  local i = math.random(0, ctx.items - 1)
  if r <= 35 then
    kv.get(key(i))
  elseif r <= 55 then
    kv.put(key(i), VALUE)
  elseif r <= 62 then
    kv.del(key(i))
  elseif r <= 70 then
    kv.mget({ key(i), key((i + 7) % ctx.items), key((i + 13) % ctx.items) })
  elseif r <= 78 then
    kv.mput({ { key = key(i), val = VALUE }, { key = key((i + 3) % ctx.items), val = VALUE } })
  elseif r <= 81 then
    kv.mdel({ key(i), key((i + 5) % ctx.items) })
  elseif r <= 91 and not ctx.ordered then
    -- An engine that keeps no key order (memcached): the same keys by mget instead.
    kv.mget({ key(i), key((i + 1) % ctx.items), key((i + 2) % ctx.items) })
  elseif r <= 88 then
    kv.range(key(i), key(i + 20), 10)
  elseif r <= 91 then
    local n = 0
    kv.scan(key(i), key(i + 20), function() n = n + 1; return n == 5 end)
  else
    kv.append(string.format("a%d-%d", ctx.thread, i % 16), SUFFIX)
  end
end

return { name = "verify", load = load, run = run }
