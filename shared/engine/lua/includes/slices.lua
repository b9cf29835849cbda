-- Runs a variadic command over a long list of arguments in slices, since Lua's unpack is bounded,
-- and returns the sum of the replies (the counts ZADD, ZREM, HSET and HDEL answer). Slices hold an
-- even number of arguments, so pair lists (score, member) are never split. Inlined where a script
-- says `-- @include slices` (state.lua does).
local function callInSlices(command, key, args)
  local total = 0
  local slice = 1000
  for i = 1, #args, slice do
    total = total + redis.call(command, key, unpack(args, i, math.min(i + slice - 1, #args)))
  end
  return total
end
