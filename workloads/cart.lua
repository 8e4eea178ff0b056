-- cart: an online shopping cart. One key per line item under a per-user prefix,
--   cart:<user>:<item>
-- so "view cart" is one range over the user's prefix. Traffic is skewed: about 80%
-- of units go to the hottest 20% of users.
--   35% add       put a line item
--   25% view      range over the user's cart
--   15% get       get one line item (may miss)
--   10% update    get a line item, then put it back with a new value
--   10% remove    find the user's first line (range, limit 1), then del it
--    5% checkout  scan the cart collecting its keys, then mdel them together
-- ctx.users is the number of carts seeded (1 to 5 lines each), ctx.items the catalog.
-- Each user shops from a small set of products (8, spread over the catalog), so
-- adds sometimes hit a line already in the cart and gets find lines that exist.

local VALUE_BYTES = 4096
-- u = floor(users * r^SKEW) sends 80% of draws to the first 20% of users.
local SKEW = math.log(0.2) / math.log(0.8)

local function random_buffer(n)
  local parts = {}
  for i = 1, n do parts[i] = string.char(math.random(0, 255)) end
  return table.concat(parts)
end
local NOISE = random_buffer(65536 + VALUE_BYTES)

local function value()
  local off = math.random(1, 65536)
  return NOISE:sub(off, off + VALUE_BYTES - 1)
end

local function prefix(user)
  return string.format("cart:%010d:", user)
end

-- ';' sorts right after ':', so [prefix, prefix_end) is exactly one user's cart.
local function prefix_end(user)
  return string.format("cart:%010d;", user)
end

local function line(user, item)
  return string.format("cart:%010d:%010d", user, item)
end

local PRODUCTS_PER_USER = 8

-- One of the user's products: a fixed, user-specific spread over the catalog.
local function product(ctx, user)
  local j = math.random(0, PRODUCTS_PER_USER - 1)
  return (user * 7919 + j * 104729) % ctx.items
end

local function hot_user(ctx)
  return math.floor(ctx.users * math.random() ^ SKEW)
end

local function load(ctx)
  local batch = {}
  for user = ctx.thread, ctx.users - 1, ctx.threads do
    for _ = 1, math.random(1, 5) do
      batch[#batch + 1] = { key = line(user, product(ctx, user)), val = value() }
    end
    if #batch >= 256 then
      kv.mput(batch)
      batch = {}
    end
  end
  if #batch > 0 then kv.mput(batch) end
end

local checkout_keys = {}
local function collect(k, _) checkout_keys[#checkout_keys + 1] = k end

local function run(ctx)
  local user = hot_user(ctx)
  local r = math.random(100)
  if r <= 35 then
    kv.put(line(user, product(ctx, user)), value())
  elseif r <= 60 then
    kv.range(prefix(user), prefix_end(user), 0)
  elseif r <= 75 then
    kv.get(line(user, product(ctx, user)))
  elseif r <= 85 then
    local k = line(user, product(ctx, user))
    if kv.get(k) then kv.put(k, value()) end
  elseif r <= 95 then
    local first = kv.range(prefix(user), prefix_end(user), 1)
    if first[1] then kv.del(first[1].key) end
  else
    for i = #checkout_keys, 1, -1 do checkout_keys[i] = nil end
    kv.scan(prefix(user), prefix_end(user), collect)
    if #checkout_keys > 0 then kv.mdel(checkout_keys) end
  end
end

return { name = "cart", load = load, run = run }
