import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import { TOMBSTONE_MS } from "../engine/redis-index.ts";
import { runScript } from "../engine/scripts.ts";
import { JournalConditionError } from "../journal/errors.ts";
import type { JournalItem } from "../journal/item.ts";
import type { EngineDeps } from "./deps.ts";

/** cancel.lua's unconfirmed tombstones score this plus the cancel's time. */
const UNCONFIRMED = 9e15;

/** What a create does about a cancel's tombstone that kept its new event out of the index. */
export type TombstoneVerdict =
  /** Left by a cancel long finished whose journal write failed: dropped; the event is indexed. */
  | { readonly stale: true }
  /** A cancel that may still be writing the journal: it wins, and the create answers cancelled. */
  | { readonly stale: false; readonly item: JournalItem };

/**
 * Issue 33, finding 5. A cancel leaves an unconfirmed tombstone before its journal write; when that
 * write fails (or the process dies), the tombstone stays, and a create of the same id later was
 * answered 201, kept out of the index by it, and cancelled by the recovery sweep. Now the create
 * judges each such tombstone by the cancel's time (which cancel.lua puts in its score):
 * - older than any journal write takes (TOMBSTONE_MS, the bound restores already rely on): that
 *   cancel is over, and as the create's own journal write created the item, the cancel found none
 *   or failed, so it never cancelled this event. The tombstone goes, and the event is indexed.
 * - younger: the cancel may still be on its way to the journal and would cancel the event there.
 *   It is let win now, in the journal first, and the create answers with the cancelled event,
 *   rather than answering "scheduled" for an event a moment later cancelled.
 */
export async function judgeTombstones(
  deps: EngineDeps,
  members: readonly string[],
  now: number,
): Promise<TombstoneVerdict[]> {
  const { index } = deps;
  const journal = deps.journal!;
  return Promise.all(
    members.map(async (member): Promise<TombstoneVerdict> => {
      if (await dropIfOlder(deps, member, now)) return { stale: true };
      const { tenant, id } = parseMember(member);
      const item = await journal.markCancelled(tenant, id, now).catch((error: unknown) => {
        if (error instanceof JournalConditionError && error.existing) return error.existing;
        throw error;
      });
      await index.confirmCancel(member, now);
      return { stale: false, item };
    }),
  );
}

/**
 * Drops the member's tombstone if its cancel is older than `created` by more than TOMBSTONE_MS
 * (or there is none): that cancel is over and cannot be about the event created at `created`.
 * Returns whether the member is free of a tombstone now. The recovery sweep asks this too, with the
 * journal item's creation time, for an event whose create died before its index write.
 */
export async function dropIfOlder(
  deps: Pick<EngineDeps, "index">,
  member: string,
  created: number,
): Promise<boolean> {
  const { index } = deps;
  const k = index.keys(index.shardOf(member));
  for (;;) {
    const score = await index.client.zscore(k.cancelled, member);
    if (score === null) return true;
    const value = Number(score);
    const cancelledAt = value >= UNCONFIRMED ? value - UNCONFIRMED : value;
    if (cancelledAt + TOMBSTONE_MS >= created) return false;
    // Only the tombstone judged: one a newer cancel wrote meanwhile is judged again.
    const code = Number(await runScript(index.client, "tombstone_drop", k, [member, score]));
    if (code === ScriptCode.OK) return true;
  }
}
