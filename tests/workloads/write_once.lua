-- Every unit puts a key of its own that nothing writes or reads again, so under
-- --verify only the final pass reads it: each write the engine dropped is exactly one
-- lost_write (tests/verify.rs). Values are 48 bytes, above the 20-byte verify tag.

local VALUE = string.rep("v", 48)

local function run(ctx)
  kv.put(string.format("w%d-%08d", ctx.thread, ctx.iter), VALUE)
end

return { name = "write_once", run = run }
