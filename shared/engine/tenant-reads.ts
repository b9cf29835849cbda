import { IndexCorruptError } from "./errors.ts";
import { tenantDueKey } from "./keys.ts";
import type { RedisIndex } from "./redis-index.ts";

/**
 * One tenant's reads of a shard's index, for its stats and timeline. Each costs the tenant's own
 * events, never another tenant's (invariant 7: another tenant's volume neither slows these reads
 * nor shows in them): the waiting events are read from the tenant's own set (`tenantDueKey`, see
 * lua/includes/due.lua), not from a set shared with every tenant.
 */

/**
 * Lapsed leases read to find one of the tenant's: `leased` is shared by every tenant and has no
 * per-tenant copy, so this read is bounded rather than per-tenant. Lapsed leases are what the next
 * claims redeliver first, so beyond a stalled dispatcher there are few; past this many, a tenant's
 * own lapsed lease may go unseen (its waiting events still count).
 */
export const LEASED_SCAN = 1_000;

/** Waiting events of one tenant due by `until`, in due order, at most `limit`. */
export async function tenantWaiting(
  index: RedisIndex,
  shard: number,
  tenant: string,
  until: number,
  limit: number,
): Promise<{ member: string; runAt: number }[]> {
  const reply = await index.client.zrangebyscore(
    tenantDueKey(index.prefix, shard, tenant),
    "-inf",
    until,
    "WITHSCORES",
    "LIMIT",
    0,
    limit,
  );
  const out: { member: string; runAt: number }[] = [];
  for (let i = 0; i < reply.length; i += 2)
    out.push({ member: `${tenant}/${reply[i]!}`, runAt: Number(reply[i + 1]) });
  return out;
}

/**
 * The earliest overdue score (due time, or a lapsed lease deadline) among one tenant's events of a
 * shard: its earliest waiting event (one read of its own set) and its earliest lease that lapsed by
 * `now` among the first LEASED_SCAN lapsed leases of the shard. One pipeline, one slot.
 */
export async function oldestOverdueOf(
  index: RedisIndex,
  shard: number,
  tenant: string,
  now: number,
): Promise<number | undefined> {
  const k = index.keys(shard);
  const results = await index.client
    .pipeline()
    .zrange(tenantDueKey(index.prefix, shard, tenant), 0, 0, "WITHSCORES")
    .zrangebyscore(k.leased, "-inf", now, "WITHSCORES", "LIMIT", 0, LEASED_SCAN)
    .exec();
  if (!results) throw new IndexCorruptError("oldestOverdueOf", []);
  for (const [error] of results) if (error) throw error;
  const waiting = results[0]![1] as string[];
  const lapsed = results[1]![1] as string[];
  const scores: number[] = [];
  if (waiting.length === 2 && Number(waiting[1]) <= now) scores.push(Number(waiting[1]));
  const prefix = `${tenant}/`;
  for (let i = 0; i < lapsed.length; i += 2)
    if (lapsed[i]!.startsWith(prefix)) {
      scores.push(Number(lapsed[i + 1]));
      break;
    }
  return scores.length > 0 ? Math.min(...scores) : undefined;
}
