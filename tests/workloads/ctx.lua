-- Prints ctx fields and iter counts to stderr so tests can check them.

-- The collector the harness starts the state with (asking for a mode returns the old one).
io.stderr:write("gc=" .. collectgarbage("generational") .. "\n")
local function load(ctx)
  io.stderr:write(string.format("load thread=%d threads=%d iter=%d batch=%d\n", ctx.thread, ctx.threads, ctx.iter, ctx.batch))
end

local function run(ctx)
  io.stderr:write(string.format(
    "run thread=%d threads=%d iter=%d users=%d items=%d ops=%d seed=%d batch=%d r=%d\n",
    ctx.thread, ctx.threads, ctx.iter, ctx.users, ctx.items, ctx.ops, ctx.seed, ctx.batch, math.random(1000000)))
end

return { name = "ctx", load = load, run = run }
