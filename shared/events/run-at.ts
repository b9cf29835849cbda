/**
 * The one rule for which times may reach the Redis index, used by every path that writes one:
 * create, batch, reschedule (through validation) and replay, restore, rebuild and the dispatcher's
 * journal check (through `indexRunAt`).
 *
 * A time in the past is "due now". A time before 2000-01-01 is not a plausible due time but a
 * client mistake (an epoch of 0, a sign error), and one that used to write negative numbers into
 * the index; it is refused. The upper bound keeps every accepted value an integer that survives a
 * round trip through a sorted-set score (a double) and Lua's number formatting exactly.
 */
export const MIN_RUN_AT = Date.UTC(2000, 0, 1);
/** 9999-12-31T23:59:59.999Z: the last instant an ISO-8601 string with a four-digit year can name. */
export const MAX_RUN_AT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Why `runAt` (epoch ms) cannot be indexed, or undefined when it can. */
export function runAtProblem(runAt: number): string | undefined {
  if (!Number.isSafeInteger(runAt)) return "is not a valid time";
  if (runAt < MIN_RUN_AT) return "is before 2000-01-01T00:00:00Z";
  if (runAt > MAX_RUN_AT) return "is after 9999-12-31T23:59:59.999Z";
  return undefined;
}

/**
 * The time to index for a runAt read back from the journal, which may predate the bounds: too
 * early means due now (the lower bound, which claims at once), garbage means due now too, and too
 * late is held at the upper bound. Valid times pass unchanged.
 */
export function indexRunAt(runAt: number): number {
  if (!Number.isFinite(runAt)) return MIN_RUN_AT;
  return Math.min(MAX_RUN_AT, Math.max(MIN_RUN_AT, Math.round(runAt)));
}
