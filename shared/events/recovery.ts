import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ScriptCode } from "../engine/codes.ts";
import { deploymentKeys, memberOf } from "../engine/keys.ts";
import { RecoveryStore } from "../engine/recovery-state.ts";
import { describeError } from "../errors.ts";
import { JournalConditionError } from "../journal/errors.ts";
import type { JournalItem } from "../journal/item.ts";
import type { EngineDeps } from "./deps.ts";
import { restoreEntryOf } from "./entries.ts";
import { indexRunAt } from "./run-at.ts";
import { dropIfOlder } from "./tombstones.ts";

/**
 * The recovery sweep: re-indexes pending journal events that are overdue by more than the grace
 * period and that the index lost, finishes cancels and replays that crashed between their two
 * writes, and drops expired dead letters (expire()).
 *
 * It never holds up dispatch (docs/reliability.md, issue 33):
 * - Each call is bounded by the caller's deadline, a page (500 journal items) at a time, and runs
 *   beside the claims, never between a due event and its claim.
 * - A round goes shard by shard, then expire() shard by shard; where it stopped lives in Redis
 *   (`recoveryRound`, and each shard's pass cursor), so the next call, from any dispatcher (on AWS
 *   the next minute's invocation), goes on from there, and every shard and expire() get their turn.
 * - Per shard, a watermark `verified` records the due time up to which every pending journal event
 *   was found in the index, so a held backlog (a paused type, a rate limit: pending in the journal,
 *   parked in the index) is read once, not every period. What could take an event below it out of
 *   the index lowers it first: a cancel (in cancel.lua, atomically), a create or a journal-only
 *   reschedule into the past (`lowerForWrites`, before the journal write), a quarantine (the shard
 *   starts over). A rebuild or a lost shard starts it over (a new epoch), and so does the
 *   re-verify period (HOURGLASS_RECOVERY_REVERIFY_SECONDS), a net under any cause nobody foresaw.
 */
export class RecoverySweep {
  readonly store: RecoveryStore;
  private readonly owner = `recovery-${randomUUID()}`;
  /** The step `begin` started, while it runs; and what the steps restored, not yet reported. */
  private running: Promise<void> | undefined;
  private restored = 0;

  constructor(private readonly deps: EngineDeps) {
    this.store = new RecoveryStore(deps.index);
  }

  /**
   * Starts a step in the background unless one still runs (a tick's, possibly outliving it): the
   * dispatcher's claims go on beside it and never wait for it.
   */
  begin(deadline: number): void {
    this.running ??= this.step(deadline)
      .then(
        (restored) => {
          this.restored += restored;
        },
        (error: unknown) => {
          this.deps.logger.error("recovery sweep failed", { error: describe(error) });
        },
      )
      .finally(() => {
        this.running = undefined;
      });
  }

  /**
   * Waits for the background step until `deadline` at most (a last page that runs past it finishes
   * later), and answers what the steps restored since the last call.
   */
  async restoredBy(deadline: number): Promise<number> {
    const running = this.running;
    if (running) {
      const timer = new AbortController();
      const wait = Math.max(0, deadline - this.deps.clock());
      await Promise.race([running, sleep(wait, undefined, { signal: timer.signal }).catch(() => {})]);
      timer.abort();
    }
    const restored = this.restored;
    this.restored = 0;
    return restored;
  }

  /** Resolves once no step runs in the background. */
  async settled(): Promise<void> {
    await this.running;
  }

  /**
   * Goes on with the round until `deadline` (epoch ms); starts a new one when the period is due
   * and none is open. Returns the events it restored. One dispatcher at a time; the others skip.
   */
  async step(deadline: number): Promise<number> {
    if (!this.deps.journal) return 0;
    const { clock } = this.deps;
    const lockMs = Math.max(1_000, deadline - clock()) + LOCK_MARGIN_MS;
    if (!(await this.store.lock(this.owner, lockMs))) return 0;
    try {
      let next = await this.store.round();
      if (next === undefined) {
        if (!(await this.periodDue())) return 0;
        next = 0;
        await this.store.setRound(next);
      }
      return await this.advance(next, deadline);
    } finally {
      await this.store.unlock(this.owner).catch(() => {});
    }
  }

  /**
   * A whole round now, reading every shard's backlog again (an operator's or a test's tool; the
   * dispatcher steps the round a bounded piece per tick).
   */
  async recover(): Promise<number> {
    if (!this.deps.journal) return 0;
    for (let shard = 0; shard < this.deps.config.shards; shard++) await this.store.reset(shard);
    await this.store.setRound(0);
    return this.advance(0, Number.POSITIVE_INFINITY, true);
  }

  /** Steps the round from `next`: shards 0..S-1 are swept, S..2S-1 expired; 2S closes it. */
  private async advance(next: number, deadline: number, everyShard = false): Promise<number> {
    const { clock, config, logger } = this.deps;
    const shards = config.shards;
    let restored = 0;
    // Left by a deployment with more shards (or unreadable): that round is over.
    if (!(next >= 0 && next < 2 * shards)) await this.store.setRound(undefined);
    while (next < 2 * shards) {
      let done = true;
      try {
        if (next < shards) {
          const step = await this.sweepShard(next, deadline, everyShard);
          restored += step.restored;
          done = step.done;
        } else {
          done = await this.expireShard(next - shards, deadline);
        }
      } catch (error) {
        // One shard's failure never stops the sweep of the others; the next round retries it.
        logger.error("recovery sweep failed on a shard", { shard: next % shards, error: describe(error) });
      }
      if (!done) return restored;
      next++;
      await this.store.setRound(next < 2 * shards ? next : undefined);
      if (clock() >= deadline) return restored;
    }
    return restored;
  }

  /** One dispatcher per period starts a round; a Redis key with a TTL elects it (not an index key). */
  private async periodDue(): Promise<boolean> {
    const { index, config } = this.deps;
    const won = await index.client.set(
      deploymentKeys(config.keyPrefix).recoveryThrottle,
      "1",
      "PX",
      config.recovery.everyMs,
      "NX",
    );
    return won === "OK";
  }

  /**
   * Reads one shard's pending journal events from its watermark to now less the grace period, a
   * page at a time, until the pass ends (done) or the deadline passes (resumed next call).
   */
  private async sweepShard(
    shard: number,
    deadline: number,
    everyShard = false,
  ): Promise<{ restored: number; done: boolean }> {
    const { clock, config, logger } = this.deps;
    const journal = this.deps.journal!;
    const now = clock();
    const found = await this.store.state(shard, now, config.recovery.reverifyMs);
    // Lost or being rebuilt: the rebuild restores every pending event, and a new epoch follows. A
    // whole round asked for now (recover()) reads such a shard too, and records nothing about it.
    if (!found && !everyShard) return { restored: 0, done: true };
    const state = found ?? { verified: undefined, pass: undefined };
    let until: number;
    let after: number | undefined;
    let cursor: string | undefined;
    if (state.pass) {
      until = state.pass.until;
      cursor = state.pass.cursor || undefined;
      after = cursor ? undefined : state.verified;
    } else {
      until = now - config.recovery.graceMs;
      after = state.verified;
      if (after !== undefined && after >= until) return { restored: 0, done: true };
    }
    let restored = 0;
    for (;;) {
      const page = await journal.pendingBetween(shard, after, until, PAGE, cursor);
      if (page.items.length > 0) {
        const codes = await this.restoreFromJournal(page.items);
        const count = codes.filter((c) => c === ScriptCode.RESTORED).length;
        if (count > 0) logger.warn("recovered events missing from the index", { shard, count });
        restored +=
          count + (await this.finishReplays(page.items.filter((_, i) => codes[i] === ScriptCode.PRESENT)));
      }
      if (found) await this.store.save(shard, until, page.cursor ?? "", clock());
      if (!page.cursor) return { restored, done: true };
      cursor = page.cursor;
      after = undefined;
      if (clock() >= deadline) return { restored, done: false };
    }
  }

  /**
   * Restores journal items into the index; returns a code per item. An item refused for a
   * cancel's tombstone is a cancel that crashed between the index and the journal: the journal
   * still says pending, so the cancel is finished here, and the journal agrees from then on.
   */
  async restoreFromJournal(items: readonly JournalItem[]): Promise<ScriptCode[]> {
    const { index, clock } = this.deps;
    const journal = this.deps.journal!;
    const codes = await index.restore(items.map(restoreEntryOf), clock());
    for (const [i, code] of codes.entries()) {
      if (code !== ScriptCode.TOMBSTONED) continue;
      const item = items[i]!;
      // A tombstone from a cancel long before the event was created is not about it (tombstones.ts).
      if (await dropIfOlder(this.deps, memberOf(item.tenant, item.id), item.createdAt)) {
        const [again] = await index.restore([restoreEntryOf(item)], clock());
        codes[i] = again!;
        continue;
      }
      await journal.markCancelled(item.tenant, item.id, clock()).catch((error: unknown) => {
        if (!(error instanceof JournalConditionError)) throw error;
      });
      await index.confirmCancel(memberOf(item.tenant, item.id), clock());
    }
    return codes;
  }

  /**
   * Pending in the journal but still dead in the index: a replay that crashed between its two
   * writes. Revive those, unless the index entry died after the journal's replay (a stale read).
   */
  private async finishReplays(present: readonly JournalItem[]): Promise<number> {
    if (present.length === 0) return 0;
    const results = await this.deps.index.reviveMany(
      present.map((item) => ({
        member: memberOf(item.tenant, item.id),
        runAt: indexRunAt(item.runAt),
        diedBefore: item.updatedAt,
      })),
    );
    const count = results.filter((r) => r.code === ScriptCode.OK).length;
    if (count > 0) this.deps.logger.warn("finished replays the index had missed", { count });
    return count;
  }

  /** Dead letters leave the index when their journal items expire (HOURGLASS_RETENTION_DAYS). */
  private async expireShard(shard: number, deadline: number): Promise<boolean> {
    const { index, clock, config } = this.deps;
    const cutoff = clock() - config.retentionSeconds * 1000;
    while ((await index.expire(shard, cutoff, PAGE)) === PAGE) if (clock() >= deadline) return false;
    return true;
  }
}

/**
 * Before a journal write that may leave pending events out of the index if the process dies right
 * after it (a create, a journal-only reschedule): each shard's recovery watermark drops below the
 * earliest of them, so the sweep reads them whatever it verified before. Only for events due more
 * than half the grace period ago: a pass reads up to now less the whole grace, so a later event
 * is beyond every pass that could have missed it, unless the write stalls or clocks drift by more
 * than half the grace (a minute by default). Called again after the write, which closes the race
 * with a pass that finished between the first call and the write.
 */
export async function lowerForWrites(
  deps: Pick<EngineDeps, "index" | "config" | "journal">,
  events: readonly { readonly member: string; readonly runAt: number }[],
  now: number,
): Promise<void> {
  if (!deps.journal) return;
  const edge = now - deps.config.recovery.graceMs / 2;
  const earliest = new Map<number, number>();
  for (const { member, runAt } of events) {
    if (runAt > edge) continue;
    const shard = deps.index.shardOf(member);
    earliest.set(shard, Math.min(runAt, earliest.get(shard) ?? runAt));
  }
  if (earliest.size === 0) return;
  const store = new RecoveryStore(deps.index);
  await Promise.all([...earliest].map(([shard, due]) => store.lower(shard, due)));
}

function describe(error: unknown): string {
  return describeError(error, Number.POSITIVE_INFINITY);
}

/** Journal items read per page; each page is one Query, one BatchGetItem and one restore call. */
const PAGE = 500;
/** The lock outlives the step's deadline by this much: a last page may run past the deadline. */
const LOCK_MARGIN_MS = 5_000;
