--[[
  Settles an admission once the ledger write is known: committed (the quantity stays taken; the
  ledger now says so too) or not (it is given back). An admission that already expired gave its
  quantity back when it was pruned, so settling it changes nothing: if its hold did commit, the
  count is now too high, which the ledger's own condition catches (and a rebuild repairs).

  KEYS[1] level (HASH)   KEYS[2] pending (ZSET)
  ARGV[1] member   ARGV[2] "1" to give the quantity back, "0" to keep it taken

  Returns:
    {0}   OK: settled
    {4}   NOT_FOUND: no such admission (expired, or Redis lost it); nothing changed
]]
if redis.call("ZREM", KEYS[2], ARGV[1]) == 0 then
  return {4}
end
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
  redis.call("HINCRBY", KEYS[1], "available", tonumber(string.match(ARGV[1], "^(%d+)|")) or 0)
end
return {0}
