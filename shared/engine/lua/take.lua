--[[
  Takes n tokens from a tenant's bucket of creates, all or none (a batch is admitted whole), so a
  tenant's cap on creates per second holds across every API process.

  KEYS  K.creates   (declared by name in scripts.ts)
  ARGV[1] rate (tokens/s)   ARGV[2] burst (capacity)   ARGV[3] n

  Returns {1} when taken, {0, retryAfterMs} when not.
]]
-- @include bucket

local ok, wait = bucketTake(K.creates, redisNow(), tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
if ok then
  return {1}
end
return {0, wait}
