--[[
  Mirrors one type's limits from DynamoDB (the durable record) into Redis, where admit.lua and the
  dispatcher read them. Versioned: an older version never overwrites a newer one, so a dispatcher
  refreshing from a read taken before a PUT cannot undo it.

  KEYS  K.config   (declared by name in scripts.ts)
  ARGV[1] version   ARGV[2] paused ("1"|"0")   ARGV[3] rate   ARGV[4] burst   ARGV[5] max
          (each "" when unset)

  Returns 1 when written, 0 when the stored version is newer.
]]

local stored = tonumber(redis.call("HGET", K.config, "version") or "-1")
if stored > tonumber(ARGV[1]) then
  return 0
end
redis.call("DEL", K.config)
redis.call("HSET", K.config, "version", ARGV[1], "paused", ARGV[2])
local fields = { "rate", "burst", "max" }
for i, field in ipairs(fields) do
  if ARGV[i + 2] ~= "" then
    redis.call("HSET", K.config, field, ARGV[i + 2])
  end
end
return 1
