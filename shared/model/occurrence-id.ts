import { createHash, randomBytes } from "node:crypto";
import { OCCURRENCE_ID } from "./occurrence-pattern.ts";

/**
 * Schedule ids: the event id alphabet, short enough that an occurrence id stays within 128, and
 * not `.` or `..` alone, which no URL can address (as event ids, shared/events/schema.ts).
 */
export const SCHEDULE_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,80}$/;

/**
 * A schedule's incarnation: twelve hex digits drawn when it is created and kept through its edits.
 * A schedule deleted and created again under the same id is another schedule whose revisions count
 * from 1 again, so the incarnation is what keeps its occurrence ids apart from the old one's events.
 * 48 random bits: two incarnations of one schedule id meet with odds of 1 in 2^48.
 */
export function newIncarnation(): string {
  return randomBytes(6).toString("hex");
}

/**
 * An occurrence's event id: `<scheduleId>@<instant>~<revision>.<incarnation>`
 * (`nightly@2026-03-29T01:30:00Z~1.5f0c9a3e71b2`). Client event ids cannot contain `@` or `~`, so
 * these never collide with them, and one instant of one revision of one incarnation can only ever
 * make one event. Schedules created before incarnations existed have none: their ids read
 * `<scheduleId>@<instant>`, with `~<revision>` after the first revision, until an edit or a resume
 * gives them one (a new revision has new ids anyway).
 */
export { OCCURRENCE_ID };

/** What names a schedule's occurrences: its id, its revision and (unless it predates them) its incarnation. */
export interface OccurrenceOwner {
  readonly id: string;
  readonly revision: number;
  readonly incarnation?: string | undefined;
}

export function occurrenceId(schedule: OccurrenceOwner, instant: number): string {
  const at = `${schedule.id}@${new Date(instant).toISOString().slice(0, 19)}Z`;
  if (schedule.incarnation !== undefined) return `${at}~${schedule.revision}.${schedule.incarnation}`;
  return schedule.revision > 1 ? `${at}~${schedule.revision}` : at;
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
