-- Every kv verb through the Lua bridge, with checks that hold for every engine
-- (del's existence result may be nil where the engine cannot tell). Run with --ops 1.

local function eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %q, want %q", what, tostring(got), tostring(want)), 2)
  end
end

local function keys_of(rows)
  local out = {}
  for i, r in ipairs(rows) do out[i] = r.key end
  return table.concat(out, ",")
end

local function run(ctx)
  kv.put("a", "1")
  kv.put("a", "2")
  eq(kv.get("a"), "2", "overwrite")
  eq(kv.get("missing"), nil, "missing key")
  kv.put("k\0\255", "\0\1\255")
  eq(kv.get("k\0\255"), "\0\1\255", "binary round trip")
  kv.put("empty", "")
  eq(kv.get("empty"), "", "empty value")

  local existed = kv.del("a")
  if existed ~= nil then eq(existed, true, "del of a present key") end
  eq(kv.get("a"), nil, "get after del")

  for _, k in ipairs({ "r", "r\0", "r\255", "ra", "rb", "rb\0", "s" }) do kv.put(k, "v" .. k) end
  eq(keys_of(kv.range("r", "s", 0)), table.concat({ "r", "r\0", "ra", "rb", "rb\0", "r\255" }, ","), "order")
  eq(#kv.range("r", "s", 2), 2, "limit")
  eq(#kv.range("s", "r", 0), 0, "inverted")
  local calls = 0
  eq(kv.scan("r", "s", function() calls = calls + 1; return calls == 3 end), 3, "scan early stop")

  local vals = kv.mget({ "ra", "nope", "rb" })
  eq(vals[1], "vra", "mget hit")
  eq(vals[2], nil, "mget hole")
  kv.mput({ { key = "m1", val = "x1" }, { key = "m2", val = "x2" } })
  eq(kv.get("m2"), "x2", "mput")
  local n = kv.mdel({ "m1", "m2", "nope" })
  if n ~= nil then eq(n, 2, "mdel count") end
  eq(kv.get("m1"), nil, "mdel")

  kv.append("log", "ab")
  kv.append("log", "\0c")
  eq(kv.get("log"), "ab\0c", "append")

  kv.delete_range("r", "rb")
  eq(keys_of(kv.range("r", "s", 0)), table.concat({ "rb", "rb\0", "r\255" }, ","), "delete_range")
  io.stderr:write("engine verbs ok\n")
end

return { name = "engine_verbs", run = run }
