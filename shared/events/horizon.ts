import type { HourglassConfig } from "../config.ts";
import { ScriptCode } from "../engine/codes.ts";
import { HorizonStore } from "../engine/horizon-state.ts";
import type { RedisIndex } from "../engine/redis-index.ts";
import type { JournalItem } from "../journal/item.ts";
import type { EngineDeps } from "./deps.ts";

/**
 * Redis holds only the near future (docs/horizon.md). An event due within the near horizon
 * (`HOURGLASS_INDEX_HORIZON_SECONDS`) is indexed when it is created; a later one lives only in the
 * journal, and this loader, run by the dispatcher at every tick, promotes it into the index ahead
 * of time: per shard, in due order, from the journal's sparse `pending` index (by shard and due
 * time), a bounded number of pages per tick, resumably.
 *
 * Why nothing is missed at the boundary:
 * - "Near" is judged in Lua (schedule.lua, restore.lua) against the LATER of the caller's clock and
 *   Redis's, plus the horizon and a margin; the loader sweeps up to the EARLIER of its own clock
 *   and Redis's, plus the horizon. Redis's clock is one clock per shard, so whatever a sweep has
 *   passed (its watermark `loaded`) is near for every create, reschedule or restore decided after
 *   it, and they index the event themselves.
 * - A far decision is made after the journal write. The first sweep that reaches that event's due
 *   time reads Redis's clock at least the margin later, so its query (an eventually consistent GSI
 *   read) runs at least the margin after the write: the margin is the GSI's propagation allowance.
 * - A sweep's progress (target and journal cursor) and its watermark are written only after the
 *   pages before them are promoted; a crash anywhere repeats pages, never skips them, and promotion
 *   goes through restore.lua, idempotent by id and version, so a repeat is harmless.
 * - The watermark lives in the shard's Redis slot and is lost with it: the rebuild after a loss
 *   reloads the near horizon and sets the watermark; with a watermark unknown, a sweep starts from
 *   the beginning. It is never advanced on a guess.
 */
export const HORIZON_MARGIN_MS = 5_000;
/** Journal items read per page; each page is one Query, one BatchGetItem and one restore call. */
const PAGE = 500;
const PARALLEL_SHARDS = 4;

/** The `nearMs` argument of the scripts: the near horizon plus its margin; undefined without a journal. */
export function nearMsOf(config: HourglassConfig, journal: boolean): number | undefined {
  return journal ? config.indexHorizonMs + HORIZON_MARGIN_MS : undefined;
}

/**
 * How far behind its target a shard's watermark may fall before a sweep runs: up to a minute, so
 * an idle shard costs one GSI query a minute, not one a tick; never so far that the claim window
 * (look-ahead + a tick) could reach an event not yet promoted.
 */
export function sweepSlackMs(config: HourglassConfig): number {
  const room = config.indexHorizonMs - config.lookAheadMs - 2 * config.tickMs;
  return Math.max(0, Math.min(room, Math.max(config.tickMs, 60_000)));
}

export interface LoaderReport {
  /** Events put into the index (restored; those it already had do not count). */
  promoted: number;
  /** Shards whose sweep ran this tick (started, resumed or finished). */
  swept: number;
  /** Shards whose sweep failed; the others went on, and the next tick retries them. */
  failedShards: number[];
}

export class HorizonLoader {
  private rotation = 0;

  constructor(
    private readonly deps: EngineDeps,
    /** Restores journal items (through the cancel tombstones); returns a code per item. */
    private readonly restore: (items: readonly JournalItem[]) => Promise<ScriptCode[]>,
    readonly store: HorizonStore = new HorizonStore(deps.index),
  ) {}

  /** The due time a rebuild of `shard` reloads up to: the near horizon, by the earlier clock. */
  async rebuildUntil(shard: number, now: number): Promise<number> {
    const state = await this.store.state(shard);
    return Math.min(now, state.redisNow) + this.deps.config.indexHorizonMs;
  }

  /** One pass over every shard, until `deadline` (epoch ms). Never throws for one shard's failure. */
  async run(deadline: number): Promise<LoaderReport> {
    const report: LoaderReport = { promoted: 0, swept: 0, failedShards: [] };
    if (!this.deps.journal) return report;
    // Each pass starts one shard further on, so a tight budget never starves the last shards.
    const count = this.deps.config.shards;
    const first = this.rotation++ % count;
    const shards = Array.from({ length: count }, (_, s) => (first + s) % count);
    let next = 0;
    const runner = async () => {
      while (next < shards.length && this.deps.clock() < deadline) {
        const shard = shards[next++]!;
        try {
          await this.shard(shard, deadline, report);
        } catch (error) {
          report.failedShards.push(shard);
          this.deps.logger.error("promoting far events failed on a shard; the next tick retries", {
            shard,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_SHARDS }, runner));
    if (report.promoted > 0) this.deps.logger.info("promoted events into the near horizon", { ...report });
    return report;
  }

  /** Starts, resumes or skips one shard's sweep, then promotes pages until it ends or time is up. */
  async shard(shard: number, deadline: number, report: LoaderReport): Promise<void> {
    const { clock, config } = this.deps;
    const journal = this.deps.journal!;
    const state = await this.store.state(shard);
    // No epoch: the index lost this shard, and the dispatcher's rebuild reloads the near horizon.
    // A rebuild in progress covers up to its own watermark; the loader goes on after it.
    if (!state.hasEpoch || state.rebuilding) return;
    const target = Math.min(clock(), state.redisNow) + config.indexHorizonMs;
    let to: number;
    let after: number | undefined;
    let cursor: string | undefined;
    if (state.sweep) {
      to = state.sweep.target;
      cursor = state.sweep.cursor || undefined;
      after = cursor ? undefined : state.loaded;
    } else {
      if (state.loaded !== undefined && target - state.loaded <= sweepSlackMs(config)) return;
      to = target;
      after = state.loaded;
    }
    if (after !== undefined && after >= to) {
      await this.store.finishSweep(shard, Math.max(after, to));
      return;
    }
    report.swept++;
    for (;;) {
      const page = await journal.pendingBetween(shard, after, to, PAGE, cursor);
      if (page.items.length > 0) {
        const codes = await this.restore(page.items);
        report.promoted += codes.filter((code) => code === ScriptCode.RESTORED).length;
      }
      if (!page.cursor) {
        await this.store.finishSweep(shard, to);
        return;
      }
      cursor = page.cursor;
      after = undefined;
      await this.store.saveSweep(shard, to, cursor);
      if (clock() >= deadline) return;
    }
  }
}

/**
 * After a reschedule's journal write: evicts the index entry the reschedule moved beyond the near
 * horizon. Asked of Redis only when the new time is far by the caller's clock; the script decides
 * by both clocks, and only for the entry still waiting under the reschedule's `version`.
 */
export async function evictIfFar(
  index: RedisIndex,
  member: string,
  version: number,
  runAt: number,
  now: number,
  config: HourglassConfig,
): Promise<boolean> {
  const nearMs = nearMsOf(config, true)!;
  if (runAt <= now + nearMs) return false;
  return new HorizonStore(index).evict(member, version, now, nearMs);
}
