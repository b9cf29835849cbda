--[[
  Takes one shard's recovery watermark below `due` (see includes/recovery.lua): called before a
  journal write that may leave a pending event due then out of the index (a create or a
  journal-only reschedule into the past), so the sweep reads it again, whatever it verified before.

  KEYS  K.recovery   (declared by name in scripts.ts)
  ARGV[1] due (ms)

  Returns 0 (OK).
]]
-- @include recovery

lowerVerified(K.recovery, tonumber(ARGV[1]))
return CODE.OK
