--[[
  Admits a hold on one SKU before the ledger (DynamoDB) is written, or refuses it without
  touching DynamoDB. Redis is a filter in front of the ledger, never the authority: the ledger's
  transaction still conditions on the stock it holds, so a count that is too high here only costs
  a DynamoDB refusal, and one that is too low is bounded (see below) and repaired by a rebuild.

  `level.available` is the ledger's available stock as of the last rebuild, plus every change
  applied since, minus the admissions not yet settled. Each admission is a `pending` member
  `quantity|attempt|reservationId` scored by its deadline: the ledger write either settles it
  (hold_settle.lua) or, if the process died between this script and the ledger write, the member
  expires and its quantity comes back here, so a leaked admission refuses nothing for longer
  than its deadline.

  KEYS  K.level  K.pending   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] quantity   ARGV[3] now (ms)   ARGV[4] deadline (ms)

  Returns:
    {0, available after}            OK: admitted
    {8, available, syncedAt}        CONFLICT: not enough available; nothing changed
    {9}                             EPOCH_MISSING: no level for this SKU (never built, or Redis
                                    lost it); the caller rebuilds it from the ledger
]]
if redis.call("EXISTS", K.level) == 0 then
  return {CODE.EPOCH_MISSING}
end
local now = tonumber(ARGV[3])

-- Leaked admissions (their process never settled them) give their quantity back.
local expired = redis.call("ZRANGEBYSCORE", K.pending, "-inf", "(" .. ARGV[3])
if #expired > 0 then
  local back = 0
  for _, member in ipairs(expired) do
    back = back + (tonumber(string.match(member, "^(%d+)|")) or 0)
  end
  redis.call("ZREMRANGEBYSCORE", K.pending, "-inf", "(" .. ARGV[3])
  redis.call("HINCRBY", K.level, "available", back)
end

local quantity = tonumber(ARGV[2])
local available = tonumber(redis.call("HGET", K.level, "available")) or 0
if available < quantity then
  return {CODE.CONFLICT, available, tonumber(redis.call("HGET", K.level, "syncedAt")) or 0}
end
redis.call("HINCRBY", K.level, "available", -quantity)
redis.call("ZADD", K.pending, tonumber(ARGV[4]), ARGV[1])
return {CODE.OK, available - quantity}
