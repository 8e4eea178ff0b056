-- One put per unit, and one line on stderr per unit, so a test can count every unit
-- the workload ran (warm-up included) and compare with what the report says.
return {
  name = "count",
  run = function(ctx)
    kv.put("k" .. ctx.thread, "v")
    io.stderr:write("unit\n")
  end,
}
