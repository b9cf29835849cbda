import type { RedisIndex } from "../engine/redis-index.ts";
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

/** How many due entries one shard may contribute; bounds the cost of a read on a huge index. */
export const SCAN_LIMIT_PER_SHARD = 10_000;

export interface Timeline {
  readonly horizon: Horizon;
  readonly from: number;
  readonly bucketMs: number;
  /** Type → pending events per bucket (bucket i starts at from + i × bucketMs). */
  readonly types: Record<string, number[]>;
  /** Type → events already due but not yet claimed. */
  readonly overdue: Record<string, number>;
  /** True when a shard held more entries in the horizon than were read. */
  readonly truncated: boolean;
}

/**
 * Pending work (scheduled or retrying) of one tenant by due time, stacked by type: read from each
 * shard's due set by score, then the matching bodies for their type (the first line of a body).
 * The index holds every tenant's members, so only `tenant/…` members are kept and nothing of any
 * other tenant leaves this function.
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
  const prefix = `${tenant}/`;
  const types: Record<string, number[]> = {};
  const overdue: Record<string, number> = {};
  let truncated = false;
  await Promise.all(
    Array.from({ length: index.shards }, async (_, shard) => {
      const keys = index.keys(shard);
      const reply = await index.client.zrangebyscore(
        keys.due,
        "-inf",
        until - 1,
        "WITHSCORES",
        "LIMIT",
        0,
        SCAN_LIMIT_PER_SHARD,
      );
      if (reply.length / 2 >= SCAN_LIMIT_PER_SHARD) truncated = true;
      const mine: { member: string; runAt: number }[] = [];
      for (let i = 0; i < reply.length; i += 2)
        if (reply[i]!.startsWith(prefix)) mine.push({ member: reply[i]!, runAt: Number(reply[i + 1]) });
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
