-- Writes 1000 bytes per unit (a 10-byte key and a 990-byte value), and reads once.
local VAL = string.rep("x", 990)
return {
  name = "bytes",
  run = function(ctx)
    local key = string.format("b:%08d", ctx.iter % 100000)
    kv.put(key, VAL)
    kv.get(key)
  end,
}
