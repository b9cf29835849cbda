import { ScriptCode } from "../engine/codes.ts";
import { HorizonStore } from "../engine/horizon-state.ts";
import { memberOf } from "../engine/keys.ts";
import { oldestOverdueOf } from "../engine/tenant-reads.ts";
import { idFactory } from "../ids.ts";
import { JournalRequiredError } from "../journal/errors.ts";
import { type JournalStatus, PENDING_STATUSES, payloadJsonOf } from "../journal/item.ts";
import type { HeldBy } from "../limits/model.ts";
import { addFarPending } from "../metrics-store/far-timeline.ts";
import type { EventView, NewEvent, ScheduleResult } from "../model/event.ts";
import { withInlinePayload } from "../model/message.ts";
import type { EventStatus } from "../model/status.ts";
import { notify, notifyDispatched } from "../notifications/publish.ts";
import type { EngineDeps } from "./deps.ts";
import { restoreEntryOf } from "./entries.ts";
import { EventNotFoundError, EventStateConflictError, EventValidationError } from "./errors.ts";
import { evictIfFar, nearMsOf } from "./horizon.ts";
import { type BatchItemResult, EventIntake } from "./intake.ts";
import { directDispatchHorizon } from "./pause.ts";
import { lowerForWrites } from "./recovery.ts";
import { journalWrite } from "./refusals.ts";
import { indexRunAt } from "./run-at.ts";
import { sendOrRelease } from "./send.ts";
import { parseReschedule, toNewEvent, type ValidationRules } from "./validate.ts";
import { overlay, viewFromIndex, viewOf } from "./views.ts";

export interface ListOptions {
  readonly status?: EventStatus | undefined;
  readonly type?: string | undefined;
  /** Only a recurring schedule's occurrences, whose ids start with `<scheduleId>@`. */
  readonly scheduleId?: string | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

/** Statuses in the counters: the event statuses, and `quarantined` for entries set aside by claim. */
export type CountedStatus = EventStatus | "quarantined";

export interface TenantStats {
  readonly byStatus: Partial<Record<CountedStatus, number>>;
  readonly byType: Record<string, Partial<Record<CountedStatus, number>>>;
  /** How late the oldest event that should have been claimed by now is, in ms (0 when none). */
  readonly oldestOverdueMs: number;
  /** Events of this tenant the index holds (scheduled, retrying, dispatched, running, dead). */
  readonly indexSize: number;
  /**
   * Waiting events flow control holds back, by reason (they count as scheduled or retrying above,
   * and never as overdue: held back is not late).
   */
  readonly heldBy: Partial<Record<HeldBy, number>>;
  /** The same, per type. */
  readonly heldByType: Record<string, Partial<Record<HeldBy, number>>>;
  /**
   * Events due beyond the index's near horizon, in the journal only (docs/horizon.md), counted in
   * byStatus and byType too. Read from the journal's `pending` index on every call.
   */
  readonly farPending: number;
  /** The far count stopped at 10,000 journal keys a shard: byStatus and byType may be low. */
  readonly farTruncated: boolean;
}

const LIVE: readonly EventStatus[] = ["scheduled", "dispatched", "running", "retrying", "dead"];

/**
 * Everything a client can do with events: schedule (one or many), read, list, reschedule, cancel,
 * stats, dead letters and replay. Writes go to the journal first and the index second, so an
 * accepted event is durable before it is visible to the dispatcher.
 */
export class EventService {
  private readonly newId = idFactory();
  private readonly intake: EventIntake;

  constructor(private readonly deps: EngineDeps) {
    this.intake = new EventIntake(deps);
  }

  private rules(allowInternal: boolean): ValidationRules {
    return {
      registry: this.deps.registry,
      horizonMs: this.deps.config.horizonMs,
      allowInternal,
      newId: () => this.newId(),
    };
  }

  async schedule(
    tenant: string,
    input: unknown,
    options: { internal?: boolean } = {},
  ): Promise<ScheduleResult> {
    const now = this.deps.clock();
    const event = toNewEvent(input, tenant, now, this.rules(options.internal ?? false));
    const [result] = await this.intake.store([event], now);
    if (!result!.ok) throw result!.error;
    return result!;
  }

  /** Schedules many events; each gets its own result, and one bad item does not fail the others. */
  async scheduleBatch(
    tenant: string,
    inputs: readonly unknown[],
    options: { internal?: boolean } = {},
  ): Promise<BatchItemResult[]> {
    const now = this.deps.clock();
    const results: BatchItemResult[] = new Array(inputs.length);
    const valid: { event: NewEvent; index: number }[] = [];
    const seen = new Map<string, number>();
    inputs.forEach((input, index) => {
      try {
        const event = toNewEvent(
          input,
          tenant,
          now,
          this.rules(options.internal ?? false),
          `events[${index}]`,
        );
        if (seen.has(event.id)) {
          throw new EventValidationError([
            { path: `events[${index}].id`, message: `repeats the id of events[${seen.get(event.id)}]` },
          ]);
        }
        seen.set(event.id, index);
        valid.push({ event, index });
      } catch (error) {
        results[index] = { ok: false, index, error: error as Error };
      }
    });
    const stored = await this.intake.store(
      valid.map((v) => v.event),
      now,
    );
    stored.forEach((result, i) => {
      const index = valid[i]!.index;
      results[index] = result.ok ? result : { ...result, index };
    });
    return results;
  }

  /** Stores events another module built and validated, with their own ids (schedule occurrences). */
  async storeMany(events: readonly NewEvent[]): Promise<BatchItemResult[]> {
    return this.intake.store(events, this.deps.clock());
  }

  async get(tenant: string, id: string): Promise<EventView> {
    const member = memberOf(tenant, id);
    const { journal, index, config } = this.deps;
    const [item, live] = await Promise.all([journal?.get(tenant, id), index.inspect(member)]);
    if (!journal) {
      if (!live) throw new EventNotFoundError(id);
      return viewFromIndex(id, live, config.retry.maxAttempts);
    }
    if (!item) throw new EventNotFoundError(id);
    return this.heldNow(tenant, overlay(viewOf(item, config.retry.maxAttempts), live));
  }

  /** A page of a tenant's events, newest first, filtered by live status and type. */
  async list(
    tenant: string,
    options: ListOptions,
  ): Promise<{ events: EventView[]; cursor: string | undefined }> {
    const journal = this.requireJournal("list");
    const events: EventView[] = [];
    let cursor = options.cursor;
    // Filters can leave a page short; read a few more pages before answering with a cursor. Each
    // read asks only for the room left, so every match it returns fits: the cursor goes after the
    // last item read, and a match read but not returned would be skipped by the next page.
    for (let pages = 0; pages < 5 && events.length < options.limit; pages++) {
      const room = options.limit - events.length;
      const page =
        options.status === "dead"
          ? await journal.listDead(tenant, room, cursor)
          : await journal.listByTenant(tenant, room, cursor);
      const lives = await Promise.all(
        page.items.map((item) =>
          PENDING_STATUSES.includes(item.status)
            ? this.deps.index.inspect(memberOf(tenant, item.id))
            : undefined,
        ),
      );
      page.items.forEach((item, i) => {
        const view = overlay(viewOf(item, this.deps.config.retry.maxAttempts), lives[i]);
        if (options.status && view.status !== options.status) return;
        if (options.type && view.type !== options.type) return;
        if (options.scheduleId && !view.id.startsWith(`${options.scheduleId}@`)) return;
        events.push(view);
      });
      cursor = page.cursor;
      if (!cursor) break;
    }
    return { events, cursor };
  }

  async cancel(tenant: string, id: string): Promise<EventView> {
    const { index, journal, config } = this.deps;
    const member = memberOf(tenant, id);
    const before = journal ? undefined : await index.inspect(member);
    const result = await index.cancel(member, this.deps.clock());
    if (result.code === ScriptCode.CONFLICT) throw new EventStateConflictError(id, result.status, "cancel");
    if (!journal) {
      if (result.code === ScriptCode.NOT_FOUND || !before) throw new EventNotFoundError(id);
      const view = viewFromIndex(id, before, config.retry.maxAttempts);
      notify(this.deps, "cancelled", { tenant, id, type: view.type, attempt: view.attempts });
      return { ...view, status: "cancelled" };
    }
    const { item, written } = await journalWrite(journal.markCancelled(tenant, id, this.deps.clock()), {
      id,
      operation: "cancel",
      // Cancelling twice is harmless: the second call sees the first one's result.
      accepts: (existing) => existing.status === "cancelled",
      onMissing: () => index.dropTombstone(member),
    });
    if (written) {
      notify(this.deps, "cancelled", { tenant, id, type: item.type, attempt: item.attempts });
      // Held by the journal only (a far event): no script counted this cancel in the stats.
      if (result.code === ScriptCode.NOT_FOUND) await index.countTransition(member, item.type, "cancelled");
    }
    // Index and journal agree now: the tombstone may be pruned once no older read can arrive.
    await index.confirmCancel(member, this.deps.clock());
    return viewOf(item, config.retry.maxAttempts);
  }

  /**
   * Moves a not-yet-started event to a new time (`{ runAt }` or `{ delaySeconds }`). The index goes
   * first, since only it knows whether the event started (a 409 then changes nothing), and hands
   * out a version; the journal takes the time only under a newer version than it has. Concurrent
   * reschedules thus end with the same (the later) time in both, and a crash between the writes
   * leaves the index ahead, which the dispatcher's journal check respects.
   */
  async reschedule(tenant: string, id: string, input: unknown): Promise<EventView> {
    const { index, journal, config } = this.deps;
    const now = this.deps.clock();
    const runAt = parseReschedule(input, now, config.horizonMs);
    const member = memberOf(tenant, id);
    const horizon = await directDispatchHorizon(index.client, config.keyPrefix, now, config.lookAheadMs, [
      runAt,
    ]);
    const result = await index.reschedule(member, runAt, now, horizon, config.dispatchLeaseMs);
    let dispatched = result.code === ScriptCode.DISPATCHED ? result : undefined;
    if (result.code === ScriptCode.CONFLICT)
      throw new EventStateConflictError(id, result.status, "reschedule");
    // The type for the notification: a far event leaves the index, where the notifier looks it up.
    let type: string | undefined;
    if (!journal) {
      if (result.code === ScriptCode.NOT_FOUND) throw new EventNotFoundError(id);
    } else {
      // Not in the index: the journal write alone moves it, and the sweep must find it if the
      // restore below never happens (recovery.ts).
      if (result.code === ScriptCode.NOT_FOUND) await lowerForWrites(this.deps, [{ member, runAt }], now);
      const outcome = await journalWrite(
        journal.reschedule(
          tenant,
          id,
          runAt,
          now,
          result.code === ScriptCode.NOT_FOUND ? undefined : result.version,
        ),
        {
          id,
          operation: "reschedule",
          // Still pending: a concurrent reschedule with a newer version got there first, and won.
          accepts: (existing) => PENDING_STATUSES.includes(existing.status),
        },
      );
      type = outcome.item.type;
      // The index writes below are this reschedule's own, not the one that won.
      const item = outcome.written ? outcome.item : undefined;
      // Not in the index (far, or lost): index it at the new time if that is near; a far one
      // stays in the journal for the loader (restore.lua answers FAR and writes nothing).
      const nearMs = nearMsOf(config, true);
      if (result.code === ScriptCode.NOT_FOUND && item) {
        const [restored] = await index.restore([restoreEntryOf(item)], now, { nearMs });
        // Indexed meanwhile, by a create between its journal and index writes (or a restore):
        // restore.lua moves such an entry only while it waits, and a create may have leased it
        // and sent it at its old time. Synced to the journal's version as the dispatcher does,
        // its gen goes up, so that message is dropped (docs/reliability.md, finding 6).
        if (restored === ScriptCode.PRESENT) {
          const synced = await index.reschedule(
            member,
            indexRunAt(item.runAt),
            now,
            horizon,
            config.dispatchLeaseMs,
            item.version ?? 0,
          );
          if (synced.code === ScriptCode.CONFLICT)
            throw new EventStateConflictError(id, synced.status, "reschedule");
          if (synced.code === ScriptCode.DISPATCHED) dispatched = synced;
          if (synced.code === ScriptCode.SCHEDULED)
            await evictIfFar(index, member, synced.version, runAt, now, config);
        }
      }
      // Moved beyond the near horizon: out of the index, so Redis keeps only the near future.
      if (result.code === ScriptCode.SCHEDULED && item)
        await evictIfFar(index, member, result.version, runAt, now, config);
    }
    if (result.code !== ScriptCode.NOT_FOUND || journal)
      notify(this.deps, "rescheduled", {
        tenant,
        id,
        ...(type !== undefined && { type }),
        attempt: "attempt" in result ? result.attempt : 0,
        runAt,
      });
    if (dispatched) {
      const message = {
        member,
        shard: index.shardOf(member),
        gen: dispatched.gen,
        runAt,
        attempt: dispatched.attempt,
      };
      notifyDispatched(this.deps, [message]);
      await sendOrRelease(this.deps, [message], now);
    }
    return this.get(tenant, id);
  }

  async deadLetters(tenant: string, limit: number, cursor?: string) {
    const page = await this.requireJournal("dead-letter listing").listDead(tenant, limit, cursor);
    return {
      events: page.items.map((item) => viewOf(item, this.deps.config.retry.maxAttempts)),
      cursor: page.cursor,
    };
  }

  /** Schedules a dead letter again, now, with its attempts reset. */
  async replay(tenant: string, id: string): Promise<EventView> {
    const journal = this.requireJournal("replay");
    const { index, config } = this.deps;
    const now = this.deps.clock();
    const member = memberOf(tenant, id);
    const { item, written } = await journalWrite(
      journal.replay(tenant, id, now, index.shardOf(member), now),
      {
        id,
        operation: "replay",
        // The journal is replayed but the index may still say dead: an earlier replay crashed
        // between the two writes, or this is the client's retry of a request whose answer was
        // lost. Finish that replay instead of refusing it; the index write below decides.
        accepts: (existing) => PENDING_STATUSES.includes(existing.status),
      },
    );
    const finishing = !written;
    const revived = await index.revive(member, indexRunAt(item.runAt), {
      // Only an index entry that died at or before the journal's replay is revived by it: both
      // are the journal's stamps (the replay's is never before the death it replaced), not clocks.
      diedBefore: item.updatedAt,
      direct: {
        now,
        // While dispatch is paused a replayed event waits in the index like any other.
        dispatchUntil: await directDispatchHorizon(index.client, config.keyPrefix, now, config.lookAheadMs, [
          indexRunAt(item.runAt),
        ]),
        leaseMs: config.dispatchLeaseMs,
      },
    });
    if (finishing && revived.code !== ScriptCode.OK && revived.code !== ScriptCode.DISPATCHED) {
      // Not a dead letter in the index either: nothing to finish, so the answer stays a conflict.
      throw new EventStateConflictError(id, item.status, "replay");
    }
    // A replay is the one way back from final, so it may pass a cancel's tombstone.
    if (revived.code === ScriptCode.NOT_FOUND)
      await index.restore([restoreEntryOf(item)], now, { replay: true });
    notify(this.deps, "scheduled", {
      tenant,
      id,
      type: item.type,
      attempt: 0,
      runAt: indexRunAt(item.runAt),
    });
    if (revived.code === ScriptCode.DISPATCHED) {
      // Due now: straight to the queue, as a new event would be, not at the next dispatcher tick.
      const message = {
        member,
        shard: index.shardOf(member),
        gen: revived.gen,
        runAt: indexRunAt(item.runAt),
        attempt: 0,
      };
      notifyDispatched(this.deps, [message], item.type);
      await sendOrRelease(this.deps, [withInlinePayload(message, payloadJsonOf(item))], now);
    }
    return this.get(tenant, id);
  }

  /** A held-back event of a type paused now is held by the pause, whatever parked it first. */
  private async heldNow(tenant: string, view: EventView): Promise<EventView> {
    if (!view.heldBy || view.heldBy === "paused" || !this.deps.flow) return view;
    const paused = await this.deps.flow.pausedTypes(tenant, [view.type]);
    return paused.has(view.type) ? { ...view, heldBy: "paused" } : view;
  }

  /** Counts from the index's counters: O(shards), whatever the number of events. */
  async stats(tenant: string): Promise<TenantStats> {
    const now = this.deps.clock();
    const shards = await Promise.all(
      Array.from({ length: this.deps.index.shards }, (_, shard) => this.deps.index.shardStats(shard)),
    );
    const held = await Promise.all(
      Array.from({ length: this.deps.index.shards }, (_, shard) => this.deps.index.heldCounts(shard)),
    );
    // The caller's own oldest overdue event, never another tenant's (invariant 7).
    const oldest = await Promise.all(
      Array.from({ length: this.deps.index.shards }, (_, shard) =>
        oldestOverdueOf(this.deps.index, shard, tenant, now),
      ),
    );
    const byStatus: Partial<Record<CountedStatus, number>> = {};
    const byType: Record<string, Partial<Record<CountedStatus, number>>> = {};
    let oldestOverdueMs = 0;
    let indexSize = 0;
    const prefix = `${tenant}|`;
    for (const shard of shards) {
      for (const [field, count] of Object.entries(shard.counters)) {
        if (!field.startsWith(prefix) || count === 0) continue;
        const [, type, status] = field.split("|") as [string, string, EventStatus];
        byStatus[status] = (byStatus[status] ?? 0) + count;
        byType[type] ??= {};
        byType[type]![status] = (byType[type]![status] ?? 0) + count;
        if (LIVE.includes(status)) indexSize += count;
      }
    }
    for (const score of oldest)
      if (score !== undefined) oldestOverdueMs = Math.max(oldestOverdueMs, now - score);
    const far = await this.countFar(tenant, now, (type, status) => {
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      byType[type] ??= {};
      byType[type]![status] = (byType[type]![status] ?? 0) + 1;
    });
    const heldBy: Partial<Record<HeldBy, number>> = {};
    const heldByType: Record<string, Partial<Record<HeldBy, number>>> = {};
    for (const counts of held) {
      for (const [field, count] of Object.entries(counts)) {
        if (!field.startsWith(prefix)) continue;
        const [, type, reason] = field.split("|") as [string, string, HeldBy];
        heldBy[reason] = (heldBy[reason] ?? 0) + count;
        heldByType[type] ??= {};
        heldByType[type]![reason] = (heldByType[type]![reason] ?? 0) + count;
      }
    }
    // A type paused now holds all its waiting events back, whatever parked them first.
    const paused = (await this.deps.flow?.pausedTypes(tenant, Object.keys(heldByType))) ?? new Set<string>();
    for (const type of paused) {
      const counts = heldByType[type]!;
      const total = Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0);
      for (const [reason, n] of Object.entries(counts) as [HeldBy, number][])
        heldBy[reason] = heldBy[reason]! - n;
      heldBy.paused = (heldBy.paused ?? 0) + total;
      heldByType[type] = { paused: total };
    }
    for (const reason of Object.keys(heldBy) as HeldBy[]) if (!heldBy[reason]) delete heldBy[reason];
    return {
      byStatus,
      byType,
      oldestOverdueMs,
      indexSize,
      heldBy,
      heldByType,
      farPending: far.count,
      farTruncated: far.truncated,
    };
  }

  /**
   * The tenant's pending events the index does not hold: those due after each shard's loaded
   * watermark (everything at or before it is in the index), from the journal. Without a journal
   * every event is in the index.
   */
  private async countFar(
    tenant: string,
    now: number,
    add: (type: string, status: JournalStatus) => void,
  ): Promise<{ count: number; truncated: boolean }> {
    const journal = this.deps.journal;
    if (!journal) return { count: 0, truncated: false };
    const horizon = new HorizonStore(this.deps.index);
    let count = 0;
    const truncated = await addFarPending(
      journal,
      this.deps.index,
      tenant,
      async (shard) => {
        const { loaded } = await horizon.state(shard);
        return loaded === undefined ? now : loaded + 1;
      },
      Number.MAX_SAFE_INTEGER,
      (type, _runAt, status) => {
        count++;
        add(type, status);
      },
    );
    return { count, truncated };
  }

  private requireJournal(operation: string) {
    if (!this.deps.journal) throw new JournalRequiredError(operation);
    return this.deps.journal;
  }
}
