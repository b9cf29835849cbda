import type { Dice } from "./dice.ts";
import type { LimitsBody } from "./history.ts";

/**
 * The load beside the main tenant's, drawn from the seed like the rest of the plan:
 * - the noisy tenant, in cycles: it pauses its type, sends a large batch that falls due while
 *   held, rate-limits the type, lifts every limit, then sends a burst due in one second; so there
 *   are held (paused, rate-limited, overdue, still `scheduled`) backlogs and very unequal ones
 *   (over a hundred events per shard against a handful). A cycle starts 10 s before a calm window
 *   (plan.ts), so its held backlog and its burst fall due inside it, where lateness is judged;
 * - the quiet tenant: a steady trickle of events due soon, and reads of its own `/v1/stats` and
 *   `/v1/timeline` (their lateness and their answers are judged, checks/fairness.ts, reads.ts);
 * - schedules of the main tenant: each is deleted and created again under the same id with the
 *   same instants, and edited shortly before its end (checks/schedules.ts).
 * Times are offsets from the start of the load, as in plan.ts.
 */
export interface TenantLoad {
  /** The noisy tenant's first cycle starts here; the quiet tenant's lateness before it is the baseline. */
  readonly noisyFromMs: number;
  /** One noisy cycle this often (the calm windows' period, so each cycle's peak falls in one). */
  readonly noisyCycleMs: number;
  /** Events of a cycle's held backlog (one batch request: 500 at most). */
  readonly noisyBatch: number;
  /**
   * Events of a cycle's burst, all due in one second (in batches of 500): past 128 per shard at 8
   * shards, where fair claims were seen to stop being fair.
   */
  readonly noisyBurst: number;
  /** Mean gap between two of the quiet tenant's creates. */
  readonly quietEveryMs: number;
  /** Mean gap between two of the quiet tenant's reads (stats and timeline in turn). */
  readonly readEveryMs: number;
  /** A new schedule this often (0: none). */
  readonly scheduleEveryMs: number;
}

/** An event of the noisy or the quiet tenant: `n` numbers it within its tenant (n-<n>, q-<n>). */
export interface TenantEvent {
  readonly n: number;
  readonly runAtMs: number;
}

export type TenantPlannedOp =
  | { readonly kind: "noisy-batch"; readonly events: readonly TenantEvent[] }
  | { readonly kind: "quiet-create"; readonly event: TenantEvent }
  | { readonly kind: "limits"; readonly limits: LimitsBody }
  | {
      readonly kind: "schedule-create";
      readonly id: string;
      readonly generation: number;
      /** On a whole second of the load's clock (the client rounds the absolute time up). */
      readonly startAtMs: number;
      readonly endAtMs: number;
      readonly everySeconds: number;
    }
  | { readonly kind: "schedule-edit"; readonly id: string; readonly generation: number }
  | {
      /** Deletes the schedule, then, once the delete answered 200 or 404, creates it again. */
      readonly kind: "schedule-recreate";
      readonly id: string;
      readonly generation: number;
      readonly startAtMs: number;
      readonly endAtMs: number;
      readonly everySeconds: number;
    }
  | { readonly kind: "read"; readonly what: "stats" | "timeline" };

/** Occurrences of a chaos schedule: every 2 s, six of them. */
const SCHEDULE_EVERY_S = 2;
const SCHEDULE_OCCURRENCES = 6;

export function planTenantOps(
  dice: Dice,
  load: TenantLoad,
  loadMs: number,
): { atMs: number; op: TenantPlannedOp }[] {
  const ops: { atMs: number; op: TenantPlannedOp }[] = [];
  // Every limit is lifted before the load ends, so the held backlog can drain in the quiet period.
  const lastLimitAt = loadMs - 2_000;
  let noisy = 0;
  const held = (atMs: number, dueFrom: number) => {
    const events = Array.from({ length: load.noisyBatch }, () => ({
      n: noisy++,
      runAtMs: dueFrom + dice.int(0, 1_000),
    }));
    ops.push({ atMs, op: { kind: "noisy-batch", events } });
  };
  for (let c = load.noisyFromMs; c + 30_000 < lastLimitAt; c += load.noisyCycleMs) {
    ops.push({ atMs: c, op: { kind: "limits", limits: { paused: true } } });
    // Due while the type is paused: an overdue held backlog, still `scheduled`, for 20 s.
    held(c + 300, c + 2_000);
    const rate = dice.int(5, 30);
    ops.push({ atMs: c + 18_000, op: { kind: "limits", limits: { ratePerSecond: rate, burst: rate } } });
    ops.push({ atMs: c + 24_000, op: { kind: "limits", limits: {} } });
    // Unlimited, all due in the same second.
    const due = c + 29_000 + dice.int(0, 500);
    for (let left = load.noisyBurst; left > 0; left -= 500) {
      const events = Array.from({ length: Math.min(500, left) }, () => ({ n: noisy++, runAtMs: due }));
      ops.push({ atMs: c + 26_000 + dice.int(0, 300), op: { kind: "noisy-batch", events } });
    }
  }
  if (load.noisyFromMs < lastLimitAt) ops.push({ atMs: lastLimitAt, op: { kind: "limits", limits: {} } });

  let quiet = 0;
  for (let at = dice.gap(load.quietEveryMs); at < loadMs; at += Math.max(50, dice.gap(load.quietEveryMs))) {
    ops.push({
      atMs: at,
      op: { kind: "quiet-create", event: { n: quiet++, runAtMs: at + dice.int(0, 3_000) } },
    });
  }
  let read = 0;
  for (let at = dice.gap(load.readEveryMs); at < loadMs; at += Math.max(100, dice.gap(load.readEveryMs))) {
    ops.push({ atMs: at, op: { kind: "read", what: read++ % 2 === 0 ? "stats" : "timeline" } });
  }

  let generation = 0;
  let s = 0;
  const span = SCHEDULE_EVERY_S * SCHEDULE_OCCURRENCES * 1_000;
  for (let at = 2_000; load.scheduleEveryMs > 0 && at + 3_000 + span < loadMs; at += load.scheduleEveryMs) {
    const id = `s-${s++}`;
    const startAtMs = at + 2_000;
    const endAtMs = startAtMs + span;
    const shape = { id, startAtMs, endAtMs, everySeconds: SCHEDULE_EVERY_S };
    ops.push({ atMs: at, op: { kind: "schedule-create", generation: ++generation, ...shape } });
    // Deleted once its first occurrences are materialized (a look-ahead early), then, as soon as
    // the delete answered, created again under the same id with the same instants.
    ops.push({
      atMs: at + dice.int(2_500, 5_000),
      op: { kind: "schedule-recreate", generation: ++generation, ...shape },
    });
    // Edited near its end (one instant or two before it, so the edit still fires before endAt):
    // the materializers' last pass races the edit.
    ops.push({
      atMs: endAtMs - dice.int(2_500, 4_500),
      op: { kind: "schedule-edit", id, generation: ++generation },
    });
  }
  return ops;
}
