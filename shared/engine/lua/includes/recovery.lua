-- The recovery sweep's watermark (shared/events/recovery.ts), inlined where a script says
-- `-- @include recovery`.
--
-- `verified` in K.recovery: every pending journal event of the shard due at or before it was found
-- in the index, so the sweep reads only what lies after it. A write that may leave a pending
-- journal event due at `due` out of the index (a cancel, before its journal write; a create or a
-- journal-only reschedule into the past, before theirs) calls this first: the watermark drops
-- below `due`, and `low` remembers `due`, because a pass that began earlier may already have read
-- past it and must not verify it when it ends (recovery_save.lua).
local function lowerVerified(recoveryKey, due)
  local verified = tonumber(redis.call("HGET", recoveryKey, "verified"))
  if verified and verified >= due then
    redis.call("HSET", recoveryKey, "verified", string.format("%d", due - 1))
  end
  local low = tonumber(redis.call("HGET", recoveryKey, "low"))
  if not low or due < low then
    redis.call("HSET", recoveryKey, "low", string.format("%d", due))
  end
end
