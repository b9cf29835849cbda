import type { RedisIndex } from "../engine/redis-index.ts";
import { tenantWaiting } from "../engine/tenant-reads.ts";
import type { EventJournal } from "../journal/journal.ts";
import { addFarPending } from "./far-timeline.ts";

/** Horizon → [bucket width in ms, bucket count]. */
export const HORIZONS = {
  hour: [60_000, 60],
  day: [3_600_000, 24],
  week: [6 * 3_600_000, 28],
  year: [7 * 86_400_000, 53],
} as const;
export type Horizon = keyof typeof HORIZONS;

/** How many of the tenant's own waiting events one shard may contribute; bounds the cost of a read. */
export const SCAN_LIMIT_PER_SHARD = 10_000;

export interface Timeline {
  readonly horizon: Horizon;
  readonly from: number;
  readonly bucketMs: number;
  /** Type → pending events per bucket (bucket i starts at from + i × bucketMs). */
  readonly types: Record<string, number[]>;
  /** Type → events already due but not yet claimed. */
  readonly overdue: Record<string, number>;
  /** True when a shard held more of the tenant's own entries in the horizon than were read. */
  readonly truncated: boolean;
}

/**
 * Pending work (scheduled or retrying) of one tenant by due time, stacked by type: read from the
 * tenant's own set of waiting events in each shard by score (engine/tenant-reads.ts), then their
 * bodies for their type (the first line of a body). No other tenant's entry is read, so another
 * tenant's volume neither hides this tenant's events (the scan limit counts its own) nor shows.
 */
export async function readTimeline(
  index: RedisIndex,
  tenant: string,
  now: number,
  horizon: Horizon,
  journal?: EventJournal,
): Promise<Timeline> {
  const [bucketMs, buckets] = HORIZONS[horizon];
  const until = now + bucketMs * buckets;
  const types: Record<string, number[]> = {};
  const overdue: Record<string, number> = {};
  let truncated = false;
  await Promise.all(
    Array.from({ length: index.shards }, async (_, shard) => {
      const keys = index.keys(shard);
      const mine = await tenantWaiting(index, shard, tenant, until - 1, SCAN_LIMIT_PER_SHARD);
      if (mine.length >= SCAN_LIMIT_PER_SHARD) truncated = true;
      for (let start = 0; start < mine.length; start += 1_000) {
        const chunk = mine.slice(start, start + 1_000);
        const bodies = await index.client.hmget(keys.body, ...chunk.map((m) => m.member));
        chunk.forEach(({ runAt }, i) => {
          const body = bodies[i];
          // A member without a body is being removed right now; it is not pending any more.
          if (!body) return;
          const type = body.slice(0, body.indexOf("\n"));
          if (runAt < now) {
            overdue[type] = (overdue[type] ?? 0) + 1;
            return;
          }
          types[type] ??= new Array<number>(buckets).fill(0);
          types[type]![Math.floor((runAt - now) / bucketMs)]! += 1;
        });
      }
    }),
  );
  // Events beyond the near horizon are in the journal only (docs/horizon.md).
  if (journal) {
    const farTruncated = await addFarPending(journal, index, tenant, now, until, (type, runAt) => {
      types[type] ??= new Array<number>(buckets).fill(0);
      types[type]![Math.floor((runAt - now) / bucketMs)]! += 1;
    });
    truncated ||= farTruncated;
  }
  return { horizon, from: now, bucketMs, types, overdue, truncated };
}
