--[[
  Drops a cancel's tombstone found stale (shared/events/tombstones.ts), only if it is still the one
  that was judged: a cancel that wrote a new tombstone since keeps it.

  KEYS  K.cancelled   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] the tombstone's score when it was judged

  Returns 0 (OK) when dropped, 5 (STALE) when the tombstone changed or is gone.
]]

if redis.call("ZSCORE", K.cancelled, ARGV[1]) ~= ARGV[2] then
  return CODE.STALE
end
redis.call("ZREM", K.cancelled, ARGV[1])
return CODE.OK
