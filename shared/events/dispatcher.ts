import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import type { GroupAllowance } from "../engine/redis-index.ts";
import { describeError } from "../errors.ts";
import { JournalConditionError } from "../journal/errors.ts";
import { journalKey, payloadJsonOf, TERMINAL_STATUSES } from "../journal/item.ts";
import { LeaseHeldError, StaleLeaseError } from "../leases/errors.ts";
import type { LeaseService } from "../leases/lease-service.ts";
import { type DispatchMessage, withInlinePayload } from "../model/message.ts";
import { notifyDispatched } from "../notifications/publish.ts";
import type { EngineDeps } from "./deps.ts";
import { HorizonLoader } from "./horizon.ts";
import { isDispatchPaused } from "./pause.ts";
import { RecoverySweep } from "./recovery.ts";
import { indexRunAt } from "./run-at.ts";
import { sendOrRelease } from "./send.ts";

export interface TickReport {
  claimed: number;
  sent: number;
  failed: number;
  /** Claimed events the journal says had already finished (or been cancelled): dropped from the index instead. */
  forgotten: number;
  /** Claimed events whose journal item has a later runAt (a write the index lost): moved, not sent. */
  resynced: number;
  /** Index entries no script could read, set aside by this tick's claims. */
  quarantined: number;
  /** Events flow control held back (parked) in this tick's claims: paused, out of rate or slots. */
  held: number;
  /** Shards whose claims failed this tick; the other shards went on. */
  failedShards: number[];
  /** Events re-indexed from the journal by the recovery sweep or a rebuild. */
  restored: number;
  rebuiltShards: number[];
  skippedGroups: number;
  /** Occurrences of recurring schedules created by the tick hook. */
  materialized: number;
  /** An operator paused dispatch (`POST /v1/admin/pause`): nothing was claimed. */
  paused?: boolean;
  /** Far events the near-horizon loader put into the index this tick (docs/horizon.md). */
  promoted?: number;
}

/** Lease names of the system live under a tenant no client can have (`~` is not allowed in tenants). */
export const SYSTEM_TENANT = "~system";

/**
 * Moves events that are almost due from the Redis index to the queue. Each pass claims per shard
 * (atomic Lua, O(T log N + M), in turns across the T tenants with due events), sends what it
 * claimed, and repeats until nothing is due or the time budget is spent; while the shard's pacing
 * budget keeps due events waiting (docs/flow-control.md), it claims again as the workers drain. Beside
 * the claims it steps the recovery sweep (recovery.ts); it rebuilds a shard whose epoch is gone.
 */

export class Dispatcher {
  private readonly owner = `dispatcher-${randomUUID()}`;
  /** Promotes far events from the journal into the index ahead of time (docs/horizon.md). */
  readonly loader: HorizonLoader;
  /** Re-indexes what the index lost, a bounded step per tick beside the claims (recovery.ts). */
  readonly recovery: RecoverySweep;

  constructor(
    private readonly deps: EngineDeps,
    private readonly leases: LeaseService | undefined,
    /** Runs at the start of every tick (schedule materialization); returns the events it created. */
    private readonly beforeDrain?: (budgetMs: number) => Promise<number>,
  ) {
    this.recovery = new RecoverySweep(deps);
    this.loader = new HorizonLoader(deps, (items) => this.recovery.restoreFromJournal(items));
  }

  async tick(budgetMs: number): Promise<TickReport> {
    const { clock, config } = this.deps;
    const deadline = clock() + budgetMs;
    const report: TickReport = {
      claimed: 0,
      sent: 0,
      failed: 0,
      forgotten: 0,
      resynced: 0,
      quarantined: 0,
      held: 0,
      restored: 0,
      rebuiltShards: [],
      skippedGroups: 0,
      failedShards: [],
      materialized: 0,
    };
    // Recurring schedules first, so occurrences due within the look-ahead are claimed this tick. A
    // failure there is logged and retried next tick; it never stops dispatch (invariant 7).
    if (this.beforeDrain) {
      try {
        report.materialized = await this.beforeDrain(budgetMs);
      } catch (error) {
        this.deps.logger.error("schedule materialization failed", { error: describe(error) });
      }
    }
    // Far events come into the index before the claims look, paused or not (accepted work waits
    // in the index in due order). Bounded to a quarter of the budget; the rest resumes next tick.
    if (this.deps.journal) {
      const loaded = await this.loader.run(clock() + budgetMs / 4);
      report.promoted = loaded.promoted;
    }
    // Paused by an operator: occurrences above are still created (accepted work), nothing is claimed.
    if (await isDispatchPaused(this.deps.index.client, config.keyPrefix)) return { ...report, paused: true };
    // The recovery sweep runs beside the claims, bounded by this tick's deadline, never between a
    // due event and its claim; what it leaves undone the next tick (any dispatcher's) goes on with.
    this.recovery.begin(deadline);
    const allowances = await this.allowances();
    // Every group and every shard on its own: one that fails (a lease table hiccup, an index entry
    // no script can read, a send that throws) is logged and retried next tick, and never stops the
    // others, nor the recovery sweep below (invariant 7).
    await Promise.all(
      this.groups().map(async (shards, group) => {
        let token: number | null | undefined;
        try {
          token = await this.leaseGroup(group, budgetMs + 10_000);
        } catch (error) {
          this.deps.logger.error("dispatcher group lease failed", { group, error: describe(error) });
          report.failedShards.push(...shards);
          return;
        }
        if (token === null) {
          report.skippedGroups++;
          return;
        }
        try {
          // Asked again once the group is leased (which can take a while under load): a pause
          // that landed since the start of the tick stops this group before it claims anything.
          let paused: boolean;
          try {
            paused = await isDispatchPaused(this.deps.index.client, config.keyPrefix);
          } catch (error) {
            this.deps.logger.error("dispatcher pause check failed", { group, error: describe(error) });
            report.failedShards.push(...shards);
            return;
          }
          if (paused) {
            report.paused = true;
            return;
          }
          await Promise.all(shards.map((shard) => this.drainSafely(shard, deadline, report, allowances)));
        } finally {
          if (token !== undefined) await this.releaseGroup(group, token).catch(() => {});
        }
      }),
    );
    // Waited for until the deadline only: a last page that runs past it finishes in the background,
    // and the next tick's claims do not wait for it (`settled` awaits it before a process stops).
    report.restored += await this.recovery.restoredBy(deadline);
    if (report.claimed > 0 || report.failed > 0 || report.restored > 0) {
      this.deps.logger.info("dispatched", {
        claimed: report.claimed,
        sent: report.sent,
        failed: report.failed || undefined,
        forgotten: report.forgotten || undefined,
        resynced: report.resynced || undefined,
        restored: report.restored || undefined,
        lookAheadMs: config.lookAheadMs,
      });
    }
    return report;
  }

  /** Resolves once no recovery step runs in the background: before a Lambda returns, or a process stops. */
  settled(): Promise<void> {
    return this.recovery.settled();
  }

  /**
   * Takes the group's short lease so overlapping dispatchers split the shards instead of racing
   * for them. Returns the fencing token, null when another dispatcher holds it, and undefined
   * when there is no lease service (engine-only mode). Lua atomicity keeps an overlap safe anyway.
   */
  private async leaseGroup(group: number, ttlMs: number): Promise<number | null | undefined> {
    if (!this.leases) return undefined;
    try {
      return (await this.leases.acquire(SYSTEM_TENANT, `dispatcher-${group}`, this.owner, ttlMs)).token;
    } catch (error) {
      if (error instanceof LeaseHeldError) return null;
      throw error;
    }
  }

  private async releaseGroup(group: number, token: number): Promise<void> {
    await this.leases!.release(SYSTEM_TENANT, `dispatcher-${group}`, this.owner, token).catch(
      (error: unknown) => {
        if (!(error instanceof StaleLeaseError)) throw error;
      },
    );
  }

  private groups(): number[][] {
    const { shards, shardGroups } = this.deps.config;
    const groups: number[][] = Array.from({ length: shardGroups }, () => []);
    for (let shard = 0; shard < shards; shard++) groups[shard % shardGroups]!.push(shard);
    return groups;
  }

  /**
   * This tick's flow-control allowances (docs/flow-control.md), shared by every shard's claims and
   * spent as they take events. A failure is logged and dispatch goes on without them: the
   * worker's admission still enforces every limit, it only costs a round trip to the queue.
   */
  private async allowances(): Promise<Map<string, GroupAllowance>> {
    const { flow, index, logger } = this.deps;
    const map = new Map<string, GroupAllowance>();
    if (!flow) return map;
    try {
      const parked = await Promise.all(
        Array.from({ length: index.shards }, (_, shard) => index.heldGroups(shard)),
      );
      for (const allowance of await flow.allowances(new Set(parked.flat())))
        map.set(allowance.group, allowance);
    } catch (error) {
      logger.error("flow-control allowances failed; admission at start still holds the limits", {
        error: describe(error),
      });
    }
    return map;
  }

  private async drainSafely(
    shard: number,
    deadline: number,
    report: TickReport,
    allowances: Map<string, GroupAllowance>,
  ): Promise<void> {
    try {
      await this.drain(shard, deadline, report, allowances);
    } catch (error) {
      report.failedShards.push(shard);
      this.deps.logger.error("dispatch failed on a shard; the others go on", {
        shard,
        error: describe(error),
      });
    }
  }

  /**
   * Claims and sends one shard's due events until none are left or the time is up. A shard that
   * lost its data is rebuilt from the journal a page at a time between the claims, so what is
   * already restored (earliest due first) is dispatched while the rebuild goes on, and the rebuild
   * resumes in the next tick from the cursor it left in Redis.
   */
  private async drain(
    shard: number,
    deadline: number,
    report: TickReport,
    allowances: Map<string, GroupAllowance>,
  ): Promise<void> {
    const { index, clock, config, journal } = this.deps;
    let rebuilding = journal !== undefined && (await index.rebuildCursor(shard)) !== undefined;
    // Waiting on the pacing budget is bounded by real time too, whatever the injected clock does.
    const realDeadline = performance.now() + Math.max(0, deadline - clock());
    // Paced claims in a row that took nothing: how long the next wait is.
    let idlePaced = 0;
    while (clock() < deadline) {
      if (rebuilding) {
        const step = await this.rebuildStep(shard);
        report.restored += step.restored;
        rebuilding = !step.done;
      }
      const now = clock();
      const result = await index.claim(
        shard,
        now,
        now + config.lookAheadMs,
        config.claimBatch,
        config.dispatchLeaseMs,
        [...allowances.values()],
        index.shardInFlight,
      );
      if (result.epochMissing) {
        report.rebuiltShards.push(shard);
        if (journal) {
          // Debug, not a warning: a first start on an empty Redis lands here too. What a real loss
          // costs is warned about as the rebuild restores events (see rebuildStep).
          this.deps.logger.debug("shard has no index yet; rebuilding it from the journal", { shard });
          // Only the near horizon comes back; the loader promotes the rest when it comes near.
          await index.startRebuild(shard, now, await this.loader.rebuildUntil(shard, now));
          rebuilding = true;
        } else {
          await index.setEpoch(shard, String(now));
        }
        continue;
      }
      if (result.quarantined.length > 0) {
        // Out of the index now: the recovery sweep reads the shard's whole backlog again to
        // re-index them from the journal, whatever it had verified before.
        if (journal) await this.recovery.store.reset(shard);
        // Each entry is quarantined once (it leaves the shard), so this logs it once.
        report.quarantined += result.quarantined.length;
        this.deps.logger.error("quarantined index entries no script can read", {
          shard,
          members: result.quarantined,
        });
      }
      report.held += result.parked;
      for (const [group, taken] of result.taken) {
        const allowance = allowances.get(group);
        if (allowance)
          allowances.set(group, { ...allowance, allowance: Math.max(0, allowance.allowance - taken) });
      }
      if (result.claimed.length === 0) {
        // Quarantined or held-back entries took the room of claims, or a rebuild has pages left: go on.
        if (result.quarantined.length > 0 || result.parked > 0 || rebuilding) continue;
        // Paced: due events wait for the workers to drain what is handed out; look again shortly,
        // a little later each time nothing came free (up to PACE_MAX_MS), so a shard waiting
        // seconds for events claimed ahead does not poll Redis a hundred times a second.
        if (result.paced && performance.now() < realDeadline) {
          await sleep(Math.min(PACE_MAX_MS, PACE_MS * 2 ** idlePaced++));
          continue;
        }
        return;
      }
      idlePaced = 0;
      report.claimed += result.claimed.length;
      await this.send(result.claimed, now, report);
      const seen = result.claimed.length + result.quarantined.length + result.parked;
      if (!rebuilding && !result.paced && seen < config.claimBatch) return;
      // Paced and the room came back a few events at a time: let it build up for a moment. Claiming
      // at once again took a handful of events per call, thousands of calls a second, each paying
      // a claim's fixed Redis work (docs/benchmarks.md, engine burst).
      if (result.paced && result.claimed.length < pacedMinimum(config.claimBatch, index.shardInFlight)) {
        if (performance.now() >= realDeadline) return;
        await sleep(PACE_MS);
      }
    }
  }

  private async send(
    claimed: (DispatchMessage & { redelivered: boolean })[],
    now: number,
    report: TickReport,
  ) {
    const messages = this.deps.journal ? await this.withJournal(claimed, now, report) : claimed;
    notifyDispatched(this.deps, messages);
    const result = await sendOrRelease(this.deps, messages, now);
    report.sent += result.sent;
    report.failed += result.failed;
  }

  /** The index's size and its oldest overdue event's lag, summed over the shards (O(shards)). */
  async indexHealth(): Promise<{ size: number; oldestOverdueMs: number; quarantined: number }> {
    const { index, clock, config } = this.deps;
    const now = clock();
    const shards = await Promise.all(
      Array.from({ length: config.shards }, (_, shard) => index.shardStats(shard)),
    );
    let size = 0;
    let oldestOverdueMs = 0;
    let quarantined = 0;
    for (const s of shards) {
      size += s.due + s.leased + s.dead;
      quarantined += s.quarantined;
      // Due events are claimed a look-ahead early; overdue means past due and still unclaimed.
      if (s.oldestDue !== undefined) oldestOverdueMs = Math.max(oldestOverdueMs, now - s.oldestDue);
      if (s.oldestLeaseDeadline !== undefined)
        oldestOverdueMs = Math.max(oldestOverdueMs, now - s.oldestLeaseDeadline);
    }
    return { size, oldestOverdueMs, quarantined };
  }

  /**
   * Reads the claimed events' journal items in one batch (100 keys a request), the read that
   * fetches their payloads anyway, so these checks cost no extra request. For every claimed event:
   * - one the journal says finished or cancelled is dropped from the index, not sent: the journal
   *   is the judge, so a crash between two writes, or a restore from a read taken before a cancel
   *   or a finish, never runs it (invariant 8);
   * - one whose journal runAt differs from the index's is moved to the journal's time when the
   *   journal is at least as new (a reschedule or retry the index lost in a crash or a failover),
   *   so an index entry with an older runAt never fires early (invariant 1);
   * - small payloads go into the messages, so the worker starts handlers without a read of its
   *   own. The read happens here, a look-ahead before the events are due, off the critical path.
   */
  private async withJournal(
    claimed: (DispatchMessage & { redelivered: boolean })[],
    now: number,
    report: TickReport,
  ): Promise<DispatchMessage[]> {
    const { index, config } = this.deps;
    const key = (m: DispatchMessage) => {
      const { tenant, id } = parseMember(m.member);
      return journalKey(tenant, id);
    };
    const items = await this.deps.journal!.getMany(claimed.map(key));
    const messages: DispatchMessage[] = [];
    for (const { redelivered: _, ...claim } of claimed) {
      const item = items.get(key(claim));
      let message: DispatchMessage = claim;
      if (item && TERMINAL_STATUSES.includes(item.status)) {
        await index.forget(claim.member, item.status as "succeeded" | "cancelled" | "dead");
        report.forgotten++;
        continue;
      }
      const journalRunAt = item ? indexRunAt(item.runAt) : claim.runAt;
      if (journalRunAt !== claim.runAt) {
        const moved = await index.reschedule(
          claim.member,
          journalRunAt,
          now,
          now + config.lookAheadMs,
          config.dispatchLeaseMs,
          item!.version ?? 0,
        );
        if (moved.code === ScriptCode.STALE && item) {
          // The index is ahead (a reschedule that crashed before its journal write): bring the
          // journal to the index's time, so the two agree again, and send as claimed.
          await this.deps
            .journal!.reschedule(item.tenant, item.id, claim.runAt, now, moved.version)
            .catch((error: unknown) => {
              if (!(error instanceof JournalConditionError)) throw error;
            });
        } else if (moved.code === ScriptCode.DISPATCHED) {
          message = { ...claim, gen: moved.gen, attempt: moved.attempt, runAt: journalRunAt };
        } else {
          // Back in `due` at the journal's time, or changed meanwhile (cancelled, started).
          report.resynced++;
          continue;
        }
        if (moved.code === ScriptCode.DISPATCHED) report.resynced++;
      }
      messages.push(item ? withInlinePayload(message, payloadJsonOf(item)) : message);
    }
    return messages;
  }

  /** A whole recovery round now, every shard's backlog read again (an operator's or a test's tool). */
  recover(): Promise<number> {
    return this.recovery.recover();
  }

  /**
   * One page of a shard's rebuild from the journal: the pending events after the saved cursor, in
   * due order, so the earliest come back first. The last page marks the shard complete.
   */
  async rebuildStep(shard: number): Promise<{ restored: number; done: boolean }> {
    const { journal, index, clock, logger } = this.deps;
    const cursor = await index.rebuildCursor(shard);
    if (cursor === undefined || !journal) return { restored: 0, done: true };
    // Up to the near-horizon watermark startRebuild set (everything, for a rebuild without one).
    const loadedUntil = (await this.loader.store.state(shard)).loaded;
    const page = await journal.pending(shard, loadedUntil, REBUILD_PAGE, cursor === "" ? undefined : cursor);
    let restored = 0;
    if (page.items.length > 0) {
      // Through the tombstones: a cancel whose journal write was lost stays cancelled.
      const codes = await this.recovery.restoreFromJournal(page.items);
      restored = codes.filter((c) => c === ScriptCode.RESTORED).length;
    }
    if (restored > 0) logger.warn("restored events from the journal", { shard, restored });
    if (page.cursor) {
      await index.saveRebuildCursor(shard, page.cursor);
      return { restored, done: false };
    }
    await index.finishRebuild(shard, clock());
    // A rebuild that found nothing at all is a first start on an empty index, not a data loss:
    // worth a debug line, not a warning on every fresh `npm start`.
    if (cursor === "" && page.items.length === 0) logger.debug("shard index is new and empty", { shard });
    else logger.info("rebuilt shard from the journal", { shard });
    return { restored, done: true };
  }

  /**
   * Rebuilds one whole shard from the journal now, all pages in one call (an operator's or a
   * test's tool; the dispatcher itself rebuilds a page per step between its claims).
   */
  async rebuild(shard: number): Promise<number> {
    if (!this.deps.journal) return 0;
    const now = this.deps.clock();
    await this.deps.index.startRebuild(shard, now, await this.loader.rebuildUntil(shard, now));
    let restored = 0;
    for (;;) {
      const step = await this.rebuildStep(shard);
      restored += step.restored;
      if (step.done) return restored;
    }
  }
}

function describe(error: unknown): string {
  return describeError(error, Number.POSITIVE_INFINITY);
}

/** How long a paced drain waits before it claims again (claim.lua's budget; docs/flow-control.md). */
const PACE_MS = 10;
/** The longest wait between paced claims that find no room: what it may add to a waiting event's lateness. */
const PACE_MAX_MS = 40;

/**
 * A paced claim smaller than this waits PACE_MS before the next one: a tenth of the batch or of
 * the budget, whichever is smaller, so room that frees up one ack at a time is claimed in tens.
 */
function pacedMinimum(claimBatch: number, budget: number): number {
  return Math.max(1, Math.floor(Math.min(claimBatch, budget > 0 ? budget : claimBatch) / 10));
}

/** Journal items read per rebuild step; each step is one query and one restore script call. */
const REBUILD_PAGE = 500;
