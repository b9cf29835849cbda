--[[
  Sets a SKU's available count from the ledger, by the holder of its rebuild lock (SET NX PX).

  The caller read the ledger's available stock (ARGV[1]) after taking the lock, then the pending
  admissions, and asked the ledger which of those holds had already committed (ARGV[4..]): those
  are in the ledger's figure, so their members go. Every other pending admission is not (it was
  not committed when the figure was read), so it is subtracted; `carry` adds back stock returned
  while the rebuild ran. Every error this leaves is high, never low.

  KEYS  K.level  K.pending  K.carry  K.lock   (declared by name in scripts.ts)
  ARGV[1] the ledger's available stock   ARGV[2] now (ms)   ARGV[3] lock token
  ARGV[4..] pending members whose holds the ledger shows committed

  Returns:
    {0, available}   OK
    {5}              STALE: the lock is no longer this caller's; nothing changed
]]
if redis.call("GET", K.lock) ~= ARGV[3] then
  return {CODE.STALE}
end
for i = 4, #ARGV do
  redis.call("ZREM", K.pending, ARGV[i])
end
-- Expired admissions never reached the ledger in time; the ledger's figure is what counts.
redis.call("ZREMRANGEBYSCORE", K.pending, "-inf", "(" .. ARGV[2])
local pending = 0
for _, member in ipairs(redis.call("ZRANGE", K.pending, 0, -1)) do
  pending = pending + (tonumber(string.match(member, "^(%d+)|")) or 0)
end
local available = tonumber(ARGV[1]) + (tonumber(redis.call("GET", K.carry)) or 0) - pending
redis.call("HSET", K.level, "available", available, "syncedAt", ARGV[2])
redis.call("DEL", K.carry, K.lock)
return {CODE.OK, available}
