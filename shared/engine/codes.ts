/** The integer codes the Lua scripts return. Each script's header lists which ones it can. */
export enum ScriptCode {
  OK = 0,
  SCHEDULED = 1,
  DISPATCHED = 2,
  EXISTS = 3,
  NOT_FOUND = 4,
  STALE = 5,
  DUPLICATE = 6,
  EARLY = 7,
  CONFLICT = 8,
  EPOCH_MISSING = 9,
  RESTORED = 10,
  PRESENT = 11,
  TOMBSTONED = 12,
  /** Due beyond the near horizon: left to the journal, promoted later by the loader. */
  FAR = 13,
}
