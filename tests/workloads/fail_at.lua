-- Raises an error on the 3rd unit of a 1-thread point; 2-thread points succeed.
local function run(ctx)
  kv.put("x", "y")
  if ctx.threads == 1 and ctx.iter == 3 then
    error("deliberate failure")
  end
end
return { name = "fail_at", run = run }
