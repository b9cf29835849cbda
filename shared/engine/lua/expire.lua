--[[
  Drops dead letters older than the journal's retention from the index. The journal item expires
  then too (its TTL), so keeping the index entry would only leave a leftover no journal backs,
  which would block a new event under the same id and keep counting in the stats forever.

  Confirmed cancel tombstones (see cancel.lua) older than the cutoff go too: no journal read that
  predates them can still be in flight. Unconfirmed ones (score UNCONFIRMED) are never pruned.

  KEYS  K.dead  K.body  K.meta  K.stats  K.cancelled   (declared by name in scripts.ts)
  ARGV[1] cutoff (ms): entries that died before it go   ARGV[2] limit

  Returns the number of entries dropped (fewer than the limit: none older are left).
]]
-- @include state

local old = redis.call("ZRANGEBYSCORE", K.dead, "-inf", "(" .. ARGV[1], "LIMIT", 0, tonumber(ARGV[2]))
for _, member in ipairs(old) do
  local body = redis.call("HGET", K.body, member)
  if body then
    countStats(member, body, "dead", false)
  end
end
dropMany(K.dead, old)
flushStats(K.stats)
redis.call("ZREMRANGEBYSCORE", K.cancelled, "-inf", "(" .. ARGV[1])
return #old
