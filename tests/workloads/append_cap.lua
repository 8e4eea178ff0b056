-- kv.append under a value cap (run with --max-value-bytes 100): true when the value
-- grew, false when the cap turned the append away; kv.value_size is nil outside epochs.
return {
  name = "append_cap",
  run = function(ctx)
    if kv.value_size() ~= nil then error("value_size outside an epoch: " .. tostring(kv.value_size())) end
    kv.put("k", string.rep("a", 90))
    local r = kv.append("k", string.rep("b", 10))
    if r ~= true then error("an append within the cap returned " .. tostring(r)) end
    r = kv.append("k", "c")
    if r ~= false then error("an append past the cap returned " .. tostring(r)) end
    local v = kv.get("k")
    if #v ~= 100 then error("the value is " .. #v .. " bytes long") end
  end,
}
