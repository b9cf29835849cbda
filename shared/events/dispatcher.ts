import { randomUUID } from "node:crypto";
import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import { journalKey, TERMINAL_STATUSES } from "../journal/item.ts";
import { LeaseHeldError, StaleLeaseError } from "../leases/errors.ts";
import type { LeaseService } from "../leases/lease-service.ts";
import { type EngineDeps, restoreEntryOf } from "./deps.ts";
import { type DispatchMessage, INLINE_PAYLOAD_LIMIT } from "./model.ts";
import { isDispatchPaused } from "./pause.ts";

export interface TickReport {
  claimed: number;
  sent: number;
  failed: number;
  /** Redelivered leases the journal says had already finished: dropped from the index instead. */
  forgotten: number;
  /** Events re-indexed from the journal by the recovery sweep or a rebuild. */
  restored: number;
  rebuiltShards: number[];
  skippedGroups: number;
  /** An operator paused dispatch (`POST /v1/admin/pause`): nothing was claimed. */
  paused?: boolean;
}

/** Lease names of the system live under a tenant no client can have (`~` is not allowed in tenants). */
export const SYSTEM_TENANT = "~system";

/**
 * Moves events that are almost due from the Redis index to the queue. Each pass claims per shard
 * (atomic Lua, O(log N + M)), sends what it claimed, and repeats until nothing is due or the time
 * budget is spent. Every so often it also sweeps the journal for events the index lost, and it
 * rebuilds a shard whose epoch marker is gone.
 */

export class Dispatcher {
  private readonly owner = `dispatcher-${randomUUID()}`;

  constructor(
    private readonly deps: EngineDeps,
    private readonly leases: LeaseService | undefined,
  ) {}

  async tick(budgetMs: number): Promise<TickReport> {
    const { clock, config } = this.deps;
    const deadline = clock() + budgetMs;
    const report: TickReport = {
      claimed: 0,
      sent: 0,
      failed: 0,
      forgotten: 0,
      restored: 0,
      rebuiltShards: [],
      skippedGroups: 0,
    };
    if (await isDispatchPaused(this.deps.index.client, config.keyPrefix)) return { ...report, paused: true };
    await Promise.all(
      this.groups().map(async (shards, group) => {
        const token = await this.leaseGroup(group, budgetMs + 10_000);
        if (token === null) {
          report.skippedGroups++;
          return;
        }
        try {
          await Promise.all(shards.map((shard) => this.drain(shard, deadline, report)));
        } finally {
          if (token !== undefined) await this.releaseGroup(group, token);
        }
      }),
    );
    if (await this.recoveryDue()) report.restored += await this.recover();
    if (report.claimed > 0 || report.failed > 0 || report.restored > 0) {
      this.deps.logger.info("dispatched", {
        claimed: report.claimed,
        sent: report.sent,
        failed: report.failed || undefined,
        forgotten: report.forgotten || undefined,
        restored: report.restored || undefined,
        lookAheadMs: config.lookAheadMs,
      });
    }
    return report;
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

  private async drain(shard: number, deadline: number, report: TickReport): Promise<void> {
    const { index, clock, config } = this.deps;
    while (clock() < deadline) {
      const now = clock();
      const result = await index.claim(
        shard,
        now,
        now + config.lookAheadMs,
        config.claimBatch,
        config.dispatchLeaseMs,
      );
      if (result.epochMissing) {
        report.restored += await this.rebuild(shard);
        report.rebuiltShards.push(shard);
        continue;
      }
      if (result.claimed.length === 0) return;
      report.claimed += result.claimed.length;
      await this.send(result.claimed, now, report);
      if (result.claimed.length < config.claimBatch) return;
    }
  }

  private async send(
    claimed: (DispatchMessage & { redelivered: boolean })[],
    now: number,
    report: TickReport,
  ) {
    const messages = this.deps.journal ? await this.withJournal(claimed, report) : claimed;
    if (messages.length === 0) return;
    const result = await this.deps.transport.send(messages, now);
    report.sent += result.sent;
    report.failed += result.failed.length;
    for (const { message, reason } of result.failed) {
      this.deps.logger.warn("send failed; will redispatch when the lease expires", {
        event: message.member,
        reason,
      });
    }
  }

  /** The index's size and its oldest overdue event's lag, summed over the shards (O(shards)). */
  async indexHealth(): Promise<{ size: number; oldestOverdueMs: number }> {
    const { index, clock, config } = this.deps;
    const now = clock();
    const shards = await Promise.all(
      Array.from({ length: config.shards }, (_, shard) => index.shardStats(shard)),
    );
    let size = 0;
    let oldestOverdueMs = 0;
    for (const s of shards) {
      size += s.due + s.leased + s.dead;
      // Due events are claimed a look-ahead early; overdue means past due and still unclaimed.
      if (s.oldestDue !== undefined) oldestOverdueMs = Math.max(oldestOverdueMs, now - s.oldestDue);
      if (s.oldestLeaseDeadline !== undefined)
        oldestOverdueMs = Math.max(oldestOverdueMs, now - s.oldestLeaseDeadline);
    }
    return { size, oldestOverdueMs };
  }

  /**
   * Reads the claimed events' journal items in one batch (100 keys a request) and:
   * - drops a redelivered event the journal says finished (a crash between the journal write and
   *   the ack): the journal is the judge, so it never runs twice;
   * - puts small payloads into the messages, so the worker starts handlers without a read of its
   *   own. The read happens here, a look-ahead before the events are due, off the critical path.
   */
  private async withJournal(
    claimed: (DispatchMessage & { redelivered: boolean })[],
    report: TickReport,
  ): Promise<DispatchMessage[]> {
    const key = (m: DispatchMessage) => {
      const { tenant, id } = parseMember(m.member);
      return journalKey(tenant, id);
    };
    const items = await this.deps.journal!.getMany(claimed.map(key));
    const messages: DispatchMessage[] = [];
    for (const { redelivered, ...message } of claimed) {
      const item = items.get(key(message));
      if (redelivered && item && TERMINAL_STATUSES.includes(item.status)) {
        await this.deps.index.forget(message.member, item.status as "succeeded" | "cancelled" | "dead");
        report.forgotten++;
        continue;
      }
      const inline = item && item.payload.length <= INLINE_PAYLOAD_LIMIT ? item.payload : undefined;
      messages.push(inline === undefined ? message : { ...message, payload: inline });
    }
    return messages;
  }

  /** One dispatcher per period does the sweep; a Redis key with a TTL elects it (not an index key). */
  private async recoveryDue(): Promise<boolean> {
    if (!this.deps.journal) return false;
    const { index, config } = this.deps;
    const won = await index.client.set(
      `${config.keyPrefix}:recovery-throttle`,
      "1",
      "PX",
      config.recovery.everyMs,
      "NX",
    );
    return won === "OK";
  }

  /**
   * Re-indexes pending events that are overdue by more than the grace period and that the index
   * does not know. The sparse `pending` index makes this a query per shard, not a scan.
   */
  async recover(): Promise<number> {
    const journal = this.deps.journal;
    if (!journal) return 0;
    const { clock, config, index } = this.deps;
    let restored = 0;
    for (let shard = 0; shard < config.shards; shard++) {
      let cursor: string | undefined;
      do {
        const page = await journal.pending(shard, clock() - config.recovery.graceMs, 500, cursor);
        if (page.items.length > 0) {
          const codes = await index.restore(page.items.map(restoreEntryOf), clock());
          const count = codes.filter((c) => c === ScriptCode.RESTORED).length;
          if (count > 0) this.deps.logger.warn("recovered events missing from the index", { shard, count });
          restored += count;
        }
        cursor = page.cursor;
      } while (cursor);
    }
    return restored;
  }

  /** Rebuilds one shard's index from the journal after Redis lost its data, then marks it complete. */
  async rebuild(shard: number): Promise<number> {
    const { journal, index, clock, logger } = this.deps;
    let restored = 0;
    if (journal) {
      let cursor: string | undefined;
      do {
        const page = await journal.pending(shard, undefined, 500, cursor);
        if (page.items.length > 0) {
          const codes = await index.restore(page.items.map(restoreEntryOf), clock());
          restored += codes.filter((c) => c === ScriptCode.RESTORED).length;
        }
        cursor = page.cursor;
      } while (cursor);
    }
    await index.setEpoch(shard, String(clock()));
    if (restored > 0) logger.warn("rebuilt shard from the journal", { shard, restored });
    return restored;
  }
}
