--[[
  Gives back the dispatch lease of events whose message could not be sent, so the next dispatcher
  tick sends them again instead of waiting for the whole lease (up to minutes) to run out. Only
  the dispatch that took the lease (same gen, still dispatched) can give it back.

  KEYS  K.leased  K.meta   (declared by name in scripts.ts)
  ARGV[1] new lease deadline (ms)   ARGV[2..] pairs: member, gen

  Returns one code per event, in order: 0 OK, 5 STALE (moved on since), 4 NOT_FOUND
]]
-- @include state

local at = tonumber(ARGV[1])
local codes = {}

for i = 2, #ARGV, 2 do
  local member, gen = ARGV[i], tonumber(ARGV[i + 1])
  if not redis.call("ZSCORE", K.leased, member) then
    codes[#codes + 1] = CODE.NOT_FOUND
  else
    local status, _, currentGen = readMeta(K.meta, member, 0)
    if status ~= "dispatched" or currentGen ~= gen then
      codes[#codes + 1] = CODE.STALE
    else
      redis.call("ZADD", K.leased, "XX", at, member)
      codes[#codes + 1] = CODE.OK
    end
  end
end

return codes
