--[[
  Appends a batch of notices to one tenant's capped notification stream, in order, one XADD
  each: the same entries a pipeline of XADD commands would write, for one command instead of one
  a notice (a client builds, sends and parses each command it sends, which cost more than the
  appends themselves; docs/notifications.md).

  KEYS  K.stream   (declared by name in scripts.ts)
  ARGV[1] the stream's cap (MAXLEN ~)
  ARGV[2..] per notice: n, then its n field/value strings (stream-entry.ts)

  Returns the number of entries appended. A failing XADD raises, and entries before it stay.
]]

local appended = 0
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local command = { "XADD", K.stream, "MAXLEN", "~", ARGV[1], "*" }
  for j = 1, n do
    command[#command + 1] = ARGV[i + j]
  end
  redis.call(unpack(command))
  appended = appended + 1
  i = i + n + 1
end
return appended
