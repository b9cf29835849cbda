--[[
  Stock came back in the ledger (a receipt, or a hold released by cancel or expiry): adds it to
  the SKU's available count, after the ledger write committed.

  While a rebuild is under way (its lock exists) the quantity is also added to `carry`, which the
  rebuild adds to the ledger's figure: that figure may have been read before this change
  committed. A change it did include is then counted twice, which errs high (the ledger's own
  condition catches that), never low.

  KEYS  K.level  K.carry  K.lock   (declared by name in scripts.ts)
  ARGV[1] quantity   ARGV[2] carry lifetime (ms)

  Returns:
    {0}   OK
    {9}   EPOCH_MISSING: no count for this SKU (never built, or Redis lost it); the caller builds
          it from the ledger now, so the first holds of a sale find it there
]]
local quantity = tonumber(ARGV[1])
if redis.call("EXISTS", K.lock) == 1 then
  redis.call("INCRBY", K.carry, quantity)
  redis.call("PEXPIRE", K.carry, tonumber(ARGV[2]))
end
if redis.call("EXISTS", K.level) == 0 then
  return {CODE.EPOCH_MISSING}
end
redis.call("HINCRBY", K.level, "available", quantity)
return {CODE.OK}
