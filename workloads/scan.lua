-- scan: streaming range reads. Each unit scans up to 1000 consecutive rows from a
-- random start through kv.scan, whose callback sees each row without building a
-- table, so memory stays flat however many rows a scan returns. Read only.
-- ctx.items is the keyspace; load seeds every key with a 4 KiB value.

local VALUE_BYTES = 4096
local ROWS = 1000

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + VALUE_BYTES)

local function key(i)
  return string.format("k:%012d", i)
end

local function load(ctx)
  local batch = {}
  for i = ctx.thread, ctx.items - 1, ctx.threads do
    local off = math.random(1, 65536)
    batch[#batch + 1] = { key = key(i), val = NOISE:sub(off, off + VALUE_BYTES - 1) }
    if #batch == 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local bytes = 0
local function visit(_, v) bytes = bytes + #v end

local function run(ctx)
  local start = math.random(0, math.max(ctx.items - ROWS, 0))
  kv.scan(key(start), "k;", visit, ROWS)
end

return { name = "scan", load = load, run = run }
