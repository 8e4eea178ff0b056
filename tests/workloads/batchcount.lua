-- One mget or mput of ctx.batch keys per unit: ops/s must be batch x wu/s.
local keys, pairs_ = {}, {}
local function run(ctx)
  for i = 1, ctx.batch do
    keys[i] = "k" .. i
    pairs_[i] = { key = "k" .. i, val = "v" }
  end
  if ctx.iter % 2 == 0 then kv.mget(keys) else kv.mput(pairs_) end
end
return { name = "batchcount", run = run, batched = true }
