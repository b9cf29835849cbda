import { randomUUID } from "node:crypto";
import pMap from "p-map";
import type { HourglassConfig } from "../config.ts";
import { IdempotencyConflictError } from "../events/errors.ts";
import type { EventService } from "../events/service.ts";
import { LeaseHeldError, StaleLeaseError } from "../leases/errors.ts";
import type { LeaseService } from "../leases/lease-service.ts";
import type { Logger } from "../logger.ts";
import type { NewEvent } from "../model/event.ts";
import { parseOccurrenceId } from "../model/occurrence-id.ts";
import { OccurrenceTakenError } from "./errors.ts";
import { between, type Evaluator, evaluator } from "./evaluate.ts";
import { type ScheduleItem, specOf } from "./model.ts";
import { cancelEvents, isFinished, occurrenceEvent } from "./occurrences.ts";
import { materializeEveryMs, materializeHorizonMs } from "./service.ts";
import { type Advance, DUE_SHARDS, type ScheduleStore } from "./store.ts";

/** catchUp "all" runs at most this many missed occurrences (the most recent); older ones count as missed. */
export const CATCH_UP_MAX = 1_000;
/** Missed occurrences beyond this are not counted one by one (the count is then a lower bound). */
const MISSED_COUNT_CAP = 100_000;
/** One schedule materializes at most this many occurrences per tick; the rest follow next tick. */
const PER_TICK_MAX = 1_000;
const PAGE = 100;
const PARALLEL_SHARDS = 4;
/** The lease name under the system tenant; dispatchers that do not hold it skip materializing. */
const LEASE = "schedules-materializer";

export interface MaterializeReport {
  schedules: number;
  materialized: number;
  skipped: number;
  missed: number;
}

export interface MaterializerDeps {
  readonly config: HourglassConfig;
  readonly store: ScheduleStore;
  readonly events: EventService;
  readonly leases: LeaseService | undefined;
  readonly logger: Logger;
  readonly clock: () => number;
  /** The system tenant the dispatcher's own leases live under. */
  readonly systemTenant: string;
}

interface Plan {
  readonly item: ScheduleItem;
  readonly events: NewEvent[];
  readonly advance: Advance;
}

/**
 * Turns schedules into events, called from the dispatcher's tick. For every active schedule whose
 * next occurrence falls within the horizon (look-ahead + one tick), it creates the occurrences as
 * ordinary events with derived ids, then advances `nextAt` with a conditional write.
 *
 * Exactly one event per instant, whatever crashes or races: the event is created before the
 * advance, and its derived id makes a repeat (a retried tick, a second dispatcher, a crash between
 * the two writes) find the existing event instead of making another. The id also names the
 * schedule's incarnation, so a schedule deleted and created again never finds the old one's events.
 * An advance that fails because the schedule was edited, paused or deleted meanwhile cancels what
 * this pass created; one that fails because another pass advanced the same revision cancels nothing.
 */
export class Materializer {
  private readonly owner = `materializer-${randomUUID()}`;
  private lastRun = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: MaterializerDeps) {}

  /** One pass within `budgetMs`. Never throws: a failure is logged and the next tick tries again. */
  async run(budgetMs: number): Promise<MaterializeReport> {
    const report: MaterializeReport = { schedules: 0, materialized: 0, skipped: 0, missed: 0 };
    const { clock, logger } = this.deps;
    const deadline = clock() + budgetMs;
    if (clock() - this.lastRun < materializeEveryMs(this.deps.config)) return report;
    this.lastRun = clock();
    try {
      // Most ticks find nothing due: a one-item read per shard answers that without taking the
      // lease, whose two writes a tick would otherwise cost every dispatcher.
      const horizon = clock() + materializeHorizonMs(this.deps.config);
      const probes = await Promise.all(
        Array.from({ length: DUE_SHARDS }, (_, s) => this.deps.store.due(s, horizon, 1)),
      );
      const due = probes.flatMap((probe, shard) => (probe.items.length > 0 ? [shard] : []));
      if (due.length === 0) return report;
      // Whole milliseconds: a budget split from Lambda's remaining time can be fractional, and the
      // lease refuses a fractional ttl (every odd remaining time failed the tick on AWS).
      const token = await this.lease(Math.ceil(budgetMs) + 10_000);
      if (token === null) return report;
      try {
        // The first due shards start whatever is left of the budget: on a slow store (a loaded
        // machine, a throttled table) the probes and the lease alone could spend it, and a pass
        // that never starts lets every schedule fall behind until its occurrences count as missed.
        // Shards beyond those, not started by the deadline, are left for the next tick.
        await pMap(
          due,
          (shard, i) =>
            i < PARALLEL_SHARDS || clock() < deadline ? this.shard(shard, deadline, report) : undefined,
          { concurrency: PARALLEL_SHARDS },
        );
      } finally {
        if (token !== undefined) await this.release(token);
      }
    } catch (error) {
      logger.error("materializing schedules failed; next tick retries", { error });
    }
    if (report.materialized > 0 || report.missed > 0 || report.skipped > 0) {
      logger.info("materialized occurrences", { ...report });
    }
    return report;
  }

  private async shard(shard: number, deadline: number, report: MaterializeReport): Promise<void> {
    const { clock, config, store } = this.deps;
    let cursor: string | undefined;
    do {
      const now = clock();
      const page = await store.due(shard, now + materializeHorizonMs(config), PAGE, cursor);
      const plans = await Promise.all(page.items.map((item) => this.plan(item, now)));
      await this.apply(plans, report);
      cursor = page.cursor;
    } while (cursor && clock() < deadline);
  }

  /** What one schedule needs this tick: the occurrences to create and where `nextAt` goes. */
  async plan(item: ScheduleItem, now: number): Promise<Plan> {
    const { config, events } = this.deps;
    const evaluate = evaluator(specOf(item));
    const horizon = now + materializeHorizonMs(config);
    const lateBound = now - config.schedules.missedAfterMs;
    const nextAt = item.nextAt!;
    let instants: number[] = [];
    let missed = 0;
    let from = nextAt;
    if (nextAt < lateBound) {
      // Downtime: occurrences older than the grace are missed, and catchUp says which still run.
      const recent = evaluate.previous(lateBound, CATCH_UP_MAX).filter((t) => t >= nextAt);
      const total = recent.length < CATCH_UP_MAX ? recent.length : countBetween(evaluate, nextAt, lateBound);
      const run = item.catchUp === "all" ? recent : item.catchUp === "latest" ? recent.slice(-1) : [];
      instants = run;
      missed = total - run.length;
      from = lateBound;
    }
    const future = between(evaluate, from, horizon, PER_TICK_MAX);
    instants = instants.concat(future);
    let following =
      future.length === PER_TICK_MAX
        ? evaluate.next(future.at(-1)!)
        : evaluate.next(Math.max(horizon, from - 1));

    let skipped = 0;
    if (item.overlap === "skip" && instants.length > 0) {
      // One occurrence at a time: the next is created only once the previous one has finished, and
      // an occurrence that comes due while it has not is skipped. Waiting leaves nextAt in place.
      let previousDone =
        item.lastOccurrenceId === undefined || (await isFinished(events, item.tenant, item.lastOccurrenceId));
      const kept: number[] = [];
      for (const t of instants) {
        if (previousDone) {
          kept.push(t);
          previousDone = false;
        } else if (t <= now) {
          skipped++;
        } else {
          following = t;
          break;
        }
      }
      instants = kept;
    }
    const created = instants.map((t) => occurrenceEvent(item, t, now));
    const last = created.at(-1);
    return {
      item,
      events: created,
      advance: {
        nextAt: following,
        windowStart: instants[0],
        lastOccurrenceAt: instants.at(-1),
        lastOccurrenceId: last?.id,
        occurrences: created.length,
        skipped,
        missed,
        now,
      },
    };
  }

  /** Creates every plan's events in one batch, then advances each schedule whose events all exist. */
  private async apply(plans: Plan[], report: MaterializeReport): Promise<void> {
    const { events, store, logger } = this.deps;
    const all = plans.flatMap((p) => p.events);
    const results = all.length > 0 ? await events.storeMany(all) : [];
    const failed = new Set<string>();
    const taken = new Set<string>();
    results.forEach((result, i) => {
      if (result.ok) return;
      const event = all[i]!;
      if (result.error instanceof IdempotencyConflictError) {
        // The id names this incarnation, revision and instant, so an event under it with other
        // content is not this occurrence (a schedule's from before incarnations existed, deleted and
        // created again): never counted as made, and never cancelled as ours.
        taken.add(keyOf(event));
        const error = new OccurrenceTakenError(
          event.tenant,
          parseOccurrenceId(event.id)?.scheduleId ?? event.id,
          event.id,
          result.error.existing.status,
        );
        logger.error("occurrence id taken by another event; counted as missed", { error });
        return;
      }
      failed.add(keyOf(event));
      logger.warn("occurrence not created; retried next tick", { id: event.id, error: result.error });
    });
    await Promise.all(
      plans.map(async (plan) => {
        const { item } = plan;
        if (plan.events.some((e) => failed.has(keyOf(e)))) return;
        // Every event left is this occurrence, created now or found existing (a retried tick, a
        // second materializer, or one the client has since cancelled or that already ran).
        const own = plan.events.filter((e) => !taken.has(keyOf(e)));
        const advance = withTaken(plan, own);
        // A schedule waiting on its previous occurrence (overlap "skip") has nothing to write.
        const idle = advance.occurrences + advance.skipped + advance.missed === 0;
        if (idle && advance.nextAt === item.nextAt) return;
        if (await store.advance(item, advance)) {
          report.schedules++;
          report.materialized += advance.occurrences;
          report.skipped += advance.skipped;
          report.missed += advance.missed;
          return;
        }
        // Someone else advanced this same incarnation and revision (to "ended", on a last pass):
        // the ids are the same, so these are their occurrences as much as ours, and their advance
        // covers them. Only when the schedule was edited, paused or deleted (and perhaps created
        // again) meanwhile do they belong to a revision that no longer exists.
        const current = await store.get(item.tenant, item.id);
        if (current && current.incarnation === item.incarnation && current.revision === item.revision) return;
        await cancelEvents(
          events,
          item.tenant,
          own.map((e) => e.id),
        );
      }),
    );
  }

  /** The materializer's own lease, so two dispatchers do not both do the work (conditions keep it safe anyway). */
  private async lease(ttlMs: number): Promise<number | null | undefined> {
    const { leases, systemTenant } = this.deps;
    if (!leases) return undefined;
    try {
      return (await leases.acquire(systemTenant, LEASE, this.owner, ttlMs)).token;
    } catch (error) {
      if (error instanceof LeaseHeldError) return null;
      throw error;
    }
  }

  private async release(token: number): Promise<void> {
    await this.deps
      .leases!.release(this.deps.systemTenant, LEASE, this.owner, token)
      .catch((error: unknown) => {
        if (!(error instanceof StaleLeaseError)) throw error;
      });
  }
}

function keyOf(event: NewEvent): string {
  return `${event.tenant}/${event.id}`;
}

/** The plan's advance, with its occurrences whose ids were taken counted as missed instead. */
function withTaken(plan: Plan, own: readonly NewEvent[]): Advance {
  const lost = plan.events.length - own.length;
  if (lost === 0) return plan.advance;
  const last = own.at(-1);
  return {
    ...plan.advance,
    occurrences: own.length,
    missed: plan.advance.missed + lost,
    // overlap "skip" waits on the last occurrence made; without one it keeps waiting on the previous.
    lastOccurrenceAt: last && parseOccurrenceId(last.id)!.occurrenceAt,
    lastOccurrenceId: last?.id,
  };
}

function countBetween(evaluate: Evaluator, from: number, to: number): number {
  let count = 0;
  let t = evaluate.next(from - 1);
  while (t !== undefined && t < to && count < MISSED_COUNT_CAP) {
    count++;
    t = evaluate.next(t);
  }
  return count;
}
