-- A kv call from inside a kv.scan callback must be refused with a clear error.
local function run(ctx)
  kv.put("a", "1")
  kv.scan("a", "b", function(k) kv.del(k) end)
end
return { name = "scan_reenter", run = run }
