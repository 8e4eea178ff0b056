-- Checks every kv verb's contract on a fresh store; any violation raises an error,
-- which fails the point and makes kvmark exit 1. Run with --ops 1.

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
  -- put / get / overwrite, binary-safe keys and values
  eq(kv.put("a", "1"), true, "put returns true")
  eq(kv.get("a"), "1", "get after put")
  kv.put("a", "2")
  eq(kv.get("a"), "2", "overwrite")
  eq(kv.get("missing"), nil, "get of a missing key")
  local bin_key, bin_val = "k\0\255\0z", "\0\1\255\0"
  kv.put(bin_key, bin_val)
  eq(kv.get(bin_key), bin_val, "binary key and value round trip")
  eq(#kv.get(bin_key), 4, "binary value length")
  kv.put("empty", "")
  eq(kv.get("empty"), "", "empty value is present, not nil")

  -- del: existence reported by the reference engine
  eq(kv.del("a"), true, "del of a present key")
  eq(kv.del("a"), false, "del of a missing key")
  eq(kv.get("a"), nil, "get after del")

  -- bytewise order with 0x00 / 0xFF bytes and prefixes
  for _, k in ipairs({ "r", "r\0", "r\255", "ra", "rb", "rb\0", "s" }) do kv.put(k, "v" .. k) end
  local rows = kv.range("r", "s", 0)
  eq(keys_of(rows), table.concat({ "r", "r\0", "ra", "rb", "rb\0", "r\255" }, ","), "range order")
  eq(rows[1].val, "vr", "range row value")
  -- half-open: lo included, hi excluded
  eq(keys_of(kv.range("ra", "rb", 0)), "ra", "half-open range")
  eq(keys_of(kv.range("ra", "rb\0", 0)), "ra,rb", "hi excluded")
  -- limits: 0 or absent = no limit
  eq(#kv.range("r", "s", 2), 2, "range limit")
  eq(#kv.range("r", "s"), 6, "absent limit")
  eq(#kv.range("r", "s", 0), 6, "zero limit")
  -- empty and inverted ranges
  eq(#kv.range("x", "y", 0), 0, "empty range")
  eq(#kv.range("s", "r", 0), 0, "inverted range")
  eq(#kv.range("ra", "ra", 0), 0, "lo == hi")

  -- scan: callback per row, early stop, row count, limit
  local seen = {}
  local n = kv.scan("r", "s", function(k, v) seen[#seen + 1] = k; eq(v, "v" .. k, "scan value") end)
  eq(n, 6, "scan count")
  eq(table.concat(seen, ","), keys_of(kv.range("r", "s")), "scan order equals range order")
  local calls = 0
  n = kv.scan("r", "s", function() calls = calls + 1; return calls == 3 end)
  eq(calls, 3, "scan stops when the callback returns true")
  eq(n, 3, "scan count with early stop")
  eq(kv.scan("r", "s", function() end, 4), 4, "scan limit")
  eq(kv.scan("s", "r", function() error("no rows expected") end), 0, "inverted scan")

  -- mget: values in key order, nil holes for misses
  local vals = kv.mget({ "ra", "nope", "rb", "" })
  eq(vals[1], "vra", "mget first")
  eq(vals[2], nil, "mget hole")
  eq(vals[3], "vrb", "mget third")
  eq(vals[4], nil, "mget empty key miss")
  eq(#kv.mget({}), 0, "mget of nothing")

  -- mput / mdel as units
  eq(kv.mput({ { key = "m1", val = "x1" }, { key = "m2", val = "x2" }, { key = "m3", val = "" } }), true, "mput")
  eq(kv.get("m2"), "x2", "mput visible")
  eq(kv.get("m3"), "", "mput empty value")
  eq(kv.mdel({ "m1", "m2", "nope" }), 2, "mdel counts existing keys")
  eq(kv.get("m1"), nil, "mdel removed m1")
  eq(kv.get("m3"), "", "mdel left m3")

  -- append grows a value; a missing key starts empty
  kv.append("ap", "ab")
  kv.append("ap", "cd")
  eq(kv.get("ap"), "abcd", "append")

  -- delete_range removes [lo, hi)
  kv.delete_range("r", "rb")
  eq(keys_of(kv.range("r", "s")), "rb,rb\0,r\255", "delete_range")

  -- numbers are accepted as keys, as Lua's string functions do
  kv.put(42, 7)
  eq(kv.get("42"), "7", "numeric key and value")

  io.stderr:write("contract ok\n")
end

return { name = "contract", run = run }
