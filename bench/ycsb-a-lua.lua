-- The Lua twin of bench/ycsb-a-spec.json, for comparing the harness's cost per
-- operation: the same 1.1M units in the same order. Units 1..100000 insert keys
-- "user" + 19 digits with 1000-byte values; the rest are 50% get / 50% put of a key
-- drawn by YCSB's scrambled zipfian (s = 0.99) over the loaded keys. Run it with one
-- thread and --ops 1100000.

local N = 100000
local VALUE_BYTES = 1000
local THETA = 0.99

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(48, 122)) end
  return table.concat(parts)
end
local NOISE = random_buffer(1048576)
local function value()
  local off = math.random(1, 1048576 - VALUE_BYTES)
  return NOISE:sub(off, off + VALUE_BYTES - 1)
end

-- Keys: a multiplicative hash of the insertion number spread over 19 digits.
local function key(i)
  return string.format("user%019d", (i * 0x9E3779B97F4A7C15) % 1000000000000000000)
end

-- YCSB's zipfian generator (Gray et al.) over n items, constants computed once.
local zetan = 0
for i = 1, N do zetan = zetan + 1 / i ^ THETA end
local zeta2 = 1 + 1 / 2 ^ THETA
local alpha = 1 / (1 - THETA)
local eta = (1 - (2 / N) ^ (1 - THETA)) / (1 - zeta2 / zetan)
local half_pow = 1 + 0.5 ^ THETA
local function zipf()
  local u = math.random()
  local uz = u * zetan
  if uz < 1 then return 0 end
  if uz < half_pow then return 1 end
  return math.floor(N * (eta * u - eta + 1) ^ alpha)
end

-- YCSB's scrambling: FNV-1a of the rank, modulo n.
local function fnv(x)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for _ = 1, 8 do
    h = (h ~ (x & 0xff)) * 1099511628211
    x = x >> 8
  end
  return h
end

local get, put = kv.get, kv.put

local function run(ctx)
  local i = ctx.iter
  if i <= N then
    put(key(i), value())
    return
  end
  local k = key(fnv(zipf()) % N + 1)
  if math.random() < 0.5 then get(k) else put(k, value()) end
end

return { name = "ycsb-a-lua", run = run }
