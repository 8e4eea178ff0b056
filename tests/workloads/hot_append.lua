-- Every unit of every thread appends one byte to the same key: concurrent
-- read-modify-write transactions on one key, which conflict on engines that detect it.
return {
  name = "hot_append",
  run = function(ctx) kv.append("hot", "x") end,
}
