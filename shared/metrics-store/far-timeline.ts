import type { RedisIndex } from "../engine/redis-index.ts";
import type { JournalItem, JournalStatus } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";

/** Journal keys one shard may contribute to the far part of a timeline, like the index's scan limit. */
const FAR_SCAN_LIMIT_PER_SHARD = 10_000;
const PAGE = 1_000;

/**
 * The part of a tenant's pending work the index does not hold: events due beyond the near horizon
 * live in the journal only (docs/horizon.md). Reads the journal's `pending` index (keys only, which
 * carry the due time) per shard from `from` (a time, or a shard's own) to `until`, keeps the
 * tenant's own keys, drops those the index holds (the index side counts them), and reads the rest
 * for their type and status. Calls `add(type, runAt, status)` once per such event; returns true
 * when a shard had more than it read.
 */
export async function addFarPending(
  journal: EventJournal,
  index: RedisIndex,
  tenant: string,
  from: number | ((shard: number) => Promise<number>),
  until: number,
  add: (type: string, runAt: number, status: JournalStatus) => void,
): Promise<boolean> {
  const prefix = `${tenant}#`;
  let truncated = false;
  await Promise.all(
    Array.from({ length: index.shards }, async (_, shard) => {
      let cursor: string | undefined;
      let read = 0;
      const start = typeof from === "number" ? from : await from(shard);
      do {
        const page = await journal.pendingKeys(shard, start, until - 1, PAGE, cursor);
        read += page.keys.length;
        const mine = page.keys.filter((key) => key.pk.startsWith(prefix));
        if (mine.length > 0) {
          const members = mine.map((key) => `${tenant}/${key.pk.slice(prefix.length)}`);
          const bodies = await index.client.hmget(index.keys(shard).body, ...members);
          const far = mine.filter((_, i) => !bodies[i]);
          const items = far.length > 0 ? await journal.getMany(far.map((key) => key.pk)) : new Map();
          for (const key of far) {
            const item = items.get(key.pk) as JournalItem | undefined;
            if (item && (item.status === "scheduled" || item.status === "retrying"))
              add(item.type, item.runAt, item.status);
          }
        }
        cursor = page.cursor;
        if (cursor && read >= FAR_SCAN_LIMIT_PER_SHARD) truncated = true;
      } while (cursor && !truncated);
    }),
  );
  return truncated;
}
