--[[
  Settles an admission once the ledger write is known: committed (the quantity stays taken; the
  ledger now says so too) or not (it is given back). An admission that already expired gave its
  quantity back when it was pruned, so settling it changes nothing: if its hold did commit, the
  count is now too high, which the ledger's own condition catches (and a rebuild repairs).

  KEYS  K.level  K.pending   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] "1" to give the quantity back, "0" to keep it taken

  Returns:
    {0}   OK: settled
    {4}   NOT_FOUND: no such admission (expired, or Redis lost it); nothing changed
]]
if redis.call("ZREM", K.pending, ARGV[1]) == 0 then
  return {CODE.NOT_FOUND}
end
if ARGV[2] == "1" and redis.call("EXISTS", K.level) == 1 then
  redis.call("HINCRBY", K.level, "available", tonumber(string.match(ARGV[1], "^(%d+)|")) or 0)
end
return {CODE.OK}
