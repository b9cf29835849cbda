import type { BackoffPolicy, Callbacks } from "../model/event.ts";

export type OverlapPolicy = "allow" | "skip";
export type CatchUpPolicy = "latest" | "all" | "none";
/** `ended`: the expression has no occurrence left before `endAt`; it stays for reading until deleted. */
export type ScheduleState = "active" | "paused" | "ended";

/** What recurs and when: everything the evaluator needs, nothing about the event it creates. */
export interface Recurrence {
  /** Five fields, or six with seconds first. Exactly one of `cron` and `rate`. */
  readonly cron?: string | undefined;
  /** `"30 seconds"`, `"5 minutes"`, `"1 day"`: a fixed interval in absolute time. */
  readonly rate?: string | undefined;
  /** IANA zone the cron fields are read in. */
  readonly timezone: string;
  /** Epoch ms, inclusive. */
  readonly startAt?: number | undefined;
  /** Epoch ms, exclusive. */
  readonly endAt?: number | undefined;
  /** Rates count from here (epoch ms, a whole second): `startAt`, or the first interval after creation. */
  readonly anchor?: number | undefined;
}

export interface ScheduledEventTemplate {
  readonly type: string;
  readonly payload: unknown;
  readonly maxAttempts?: number | undefined;
  readonly backoff?: BackoffPolicy | undefined;
  readonly callbacks?: Callbacks | undefined;
}

/** A validated schedule as the service stores it. */
export interface ScheduleSpec extends Recurrence {
  readonly event: ScheduledEventTemplate;
  readonly overlap: OverlapPolicy;
  readonly jitterSeconds: number;
  readonly catchUp: CatchUpPolicy;
}

/** One schedule as DynamoDB stores it: partition `tenant`, sort key `id`. */
export interface ScheduleItem {
  readonly pk: string;
  readonly sk: string;
  readonly tenant: string;
  readonly id: string;
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly startAt?: number;
  readonly endAt?: number;
  readonly anchor?: number;
  readonly type: string;
  /** JSON text, so any JSON value round-trips exactly. */
  readonly payload: string;
  readonly maxAttempts?: number;
  readonly backoff?: BackoffPolicy;
  readonly callbacks?: Callbacks;
  readonly overlap: OverlapPolicy;
  readonly jitterSeconds: number;
  readonly catchUp: CatchUpPolicy;
  readonly state: ScheduleState;
  /** Hash of the body as the client sent it: a repeat with another hash is a conflict. */
  readonly fingerprint: string;
  /**
   * Bumped by every edit, pause and resume. It is part of the occurrence ids, so occurrences
   * cancelled under an old revision never block the new revision's instants.
   */
  readonly revision: number;
  /**
   * Drawn at creation and kept by edits, pauses and resumes; part of the occurrence ids, so a
   * schedule deleted and created again under the same id never meets the old one's events.
   * Absent on schedules created before it existed, until their next edit or resume.
   */
  readonly incarnation?: string;
  /** The next occurrence not yet materialized (epoch ms); absent once ended. */
  readonly nextAt?: number;
  /** Present only while active with an occurrence left: the sparse `due` index. */
  readonly dshard?: string;
  readonly dnext?: number;
  /** The first instant of the latest materialization, so a cancel can reach its catch-up occurrences. */
  readonly windowStart?: number;
  /** The latest occurrence materialized (epoch ms) and its event id, which `overlap: "skip"` waits on. */
  readonly lastOccurrenceAt?: number;
  readonly lastOccurrenceId?: string;
  readonly occurrences?: number;
  readonly skipped?: number;
  readonly missed?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What `get` and `list` return. Times are epoch ms; the HTTP layer makes them ISO strings. */
export interface ScheduleView {
  readonly id: string;
  readonly cron?: string | undefined;
  readonly rate?: string | undefined;
  readonly timezone: string;
  readonly startAt?: number | undefined;
  readonly endAt?: number | undefined;
  readonly event: ScheduledEventTemplate;
  readonly overlap: OverlapPolicy;
  readonly jitterSeconds: number;
  readonly catchUp: CatchUpPolicy;
  readonly state: ScheduleState;
  readonly revision: number;
  readonly nextAt?: number | undefined;
  readonly lastOccurrenceAt?: number | undefined;
  readonly occurrences: number;
  readonly skipped: number;
  readonly missed: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export function viewOfSchedule(item: ScheduleItem): ScheduleView {
  return {
    id: item.id,
    ...(item.cron !== undefined && { cron: item.cron }),
    ...(item.rate !== undefined && { rate: item.rate }),
    timezone: item.timezone,
    startAt: item.startAt,
    endAt: item.endAt,
    event: {
      type: item.type,
      payload: JSON.parse(item.payload) as unknown,
      maxAttempts: item.maxAttempts,
      backoff: item.backoff,
      ...(item.callbacks && { callbacks: item.callbacks }),
    },
    overlap: item.overlap,
    jitterSeconds: item.jitterSeconds,
    catchUp: item.catchUp,
    state: item.state,
    revision: item.revision,
    nextAt: item.nextAt,
    lastOccurrenceAt: item.lastOccurrenceAt,
    occurrences: item.occurrences ?? 0,
    skipped: item.skipped ?? 0,
    missed: item.missed ?? 0,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

export function specOf(item: ScheduleItem): ScheduleSpec {
  const view = viewOfSchedule(item);
  return { ...view, anchor: item.anchor };
}
