import { createHash } from "node:crypto";

/**
 * Schedule ids: the event id alphabet, short enough that an occurrence id stays within 128, and
 * not `.` or `..` alone, which no URL can address (as event ids, shared/events/schema.ts).
 */
export const SCHEDULE_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,80}$/;

/**
 * An occurrence's event id: `<scheduleId>@<instant>` (`nightly@2026-03-29T01:30:00Z`), with
 * `~<revision>` after the first revision. Client event ids cannot contain `@` or `~`, so these
 * never collide with them, and one instant of one revision can only ever make one event.
 */
export const OCCURRENCE_ID =
  /^([A-Za-z0-9._:-]{1,80})@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)(?:~([1-9]\d{0,8}))?$/;

export function occurrenceId(scheduleId: string, instant: number, revision: number): string {
  const iso = `${new Date(instant).toISOString().slice(0, 19)}Z`;
  return revision > 1 ? `${scheduleId}@${iso}~${revision}` : `${scheduleId}@${iso}`;
}

export interface OccurrenceRef {
  readonly scheduleId: string;
  /** Epoch ms. */
  readonly occurrenceAt: number;
}

/** The schedule and instant an event id names, or undefined for an ordinary event. */
export function parseOccurrenceId(id: string): OccurrenceRef | undefined {
  const match = OCCURRENCE_ID.exec(id);
  if (!match) return undefined;
  return { scheduleId: match[1]!, occurrenceAt: Date.parse(match[2]!) };
}

/**
 * The delay added to an occurrence's run time, in ms, in [0, jitterSeconds × 1000]. Derived from
 * the occurrence id, so every dispatcher (and every retry of a tick) computes the same run time.
 */
export function jitterMs(id: string, jitterSeconds: number): number {
  if (jitterSeconds <= 0) return 0;
  const hash = createHash("sha256").update(id).digest().readUInt32BE(0);
  return hash % (jitterSeconds * 1000 + 1);
}
