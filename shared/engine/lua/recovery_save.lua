--[[
  Records a recovery pass's progress on one shard (shared/events/recovery.ts), after the pages
  before it were restored: a crash repeats pages, never skips them.

  KEYS  K.recovery   (declared by name in scripts.ts)
  ARGV[1] until: the due time the pass reads up to   ARGV[2] cursor, or "" when the pass is done
  ARGV[3] now (ms)

  A finished pass verifies up to `until`, but never `low` or beyond it: a write lowered the
  watermark to there while the pass ran (includes/recovery.lua), and its event may have reached the
  journal behind the pass's cursor. `low` is spent: the next pass starts below it.

  Returns the watermark when the pass is done, else "".
]]

if ARGV[2] ~= "" then
  redis.call("HSET", K.recovery, "until", ARGV[1], "cursor", ARGV[2])
  return ""
end
local verified = tonumber(ARGV[1])
local low = tonumber(redis.call("HGET", K.recovery, "low"))
if low and low - 1 < verified then
  verified = low - 1
end
local text = string.format("%d", verified)
redis.call("HSET", K.recovery, "verified", text)
redis.call("HSETNX", K.recovery, "since", ARGV[3])
redis.call("HDEL", K.recovery, "low", "until", "cursor")
return text
