--[[
  Stock came back in the ledger (a receipt, or a hold released by cancel or expiry): adds it to
  the SKU's available count, after the ledger write committed.

  While a rebuild is under way (its lock exists) the quantity is also added to `carry`, which the
  rebuild adds to the ledger's figure: that figure may have been read before this change
  committed. A change it did include is then counted twice, which errs high (the ledger's own
  condition catches that), never low.

  KEYS[1] level (HASH)   KEYS[2] carry (STRING)   KEYS[3] rebuild lock (STRING)
  ARGV[1] quantity   ARGV[2] carry lifetime (ms)

  Returns:
    {0}   OK
]]
local quantity = tonumber(ARGV[1])
if redis.call("EXISTS", KEYS[3]) == 1 then
  redis.call("INCRBY", KEYS[2], quantity)
  redis.call("PEXPIRE", KEYS[2], tonumber(ARGV[2]))
end
if redis.call("EXISTS", KEYS[1]) == 1 then
  redis.call("HINCRBY", KEYS[1], "available", quantity)
end
return {0}
