--[[
  Sets a SKU's available count from the ledger, by the holder of its rebuild lock (SET NX PX).

  The caller read the ledger's available stock (ARGV[1]) after taking the lock, then the pending
  admissions, and asked the ledger which of those holds had already committed (ARGV[4..]): those
  are in the ledger's figure, so their members go. Every other pending admission is not (it was
  not committed when the figure was read), so it is subtracted; `carry` adds back stock returned
  while the rebuild ran. Every error this leaves is high, never low.

  KEYS[1] level (HASH)   KEYS[2] pending (ZSET)   KEYS[3] carry (STRING)   KEYS[4] rebuild lock
  ARGV[1] the ledger's available stock   ARGV[2] now (ms)   ARGV[3] lock token
  ARGV[4..] pending members whose holds the ledger shows committed

  Returns:
    {0, available}   OK
    {5}              STALE: the lock is no longer this caller's; nothing changed
]]
if redis.call("GET", KEYS[4]) ~= ARGV[3] then
  return {5}
end
for i = 4, #ARGV do
  redis.call("ZREM", KEYS[2], ARGV[i])
end
-- Expired admissions never reached the ledger in time; the ledger's figure is what counts.
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", "(" .. ARGV[2])
local pending = 0
for _, member in ipairs(redis.call("ZRANGE", KEYS[2], 0, -1)) do
  pending = pending + (tonumber(string.match(member, "^(%d+)|")) or 0)
end
local available = tonumber(ARGV[1]) + (tonumber(redis.call("GET", KEYS[3])) or 0) - pending
redis.call("HSET", KEYS[1], "available", available, "syncedAt", ARGV[2])
redis.call("DEL", KEYS[3], KEYS[4])
return {0, available}
