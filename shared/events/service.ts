import { encodeBody } from "../engine/body.ts";
import { ScriptCode } from "../engine/codes.ts";
import { memberOf } from "../engine/keys.ts";
import { idFactory } from "../ids.ts";
import { JournalConditionError } from "../journal/errors.ts";
import { type JournalItem, PENDING_STATUSES, viewOf } from "../journal/item.ts";
import { type EngineDeps, overlay, restoreEntryOf, viewFromIndex } from "./deps.ts";
import {
  EventNotFoundError,
  EventStateConflictError,
  EventValidationError,
  IdempotencyConflictError,
  JournalRequiredError,
} from "./errors.ts";
import {
  type DispatchMessage,
  type EventStatus,
  type EventView,
  INLINE_PAYLOAD_LIMIT,
  type NewEvent,
  type ScheduleResult,
} from "./model.ts";
import { directDispatchHorizon } from "./pause.ts";
import { parseReschedule, toNewEvent, type ValidationRules } from "./validate.ts";

export type BatchItemResult =
  | (ScheduleResult & { readonly ok: true })
  | { readonly ok: false; readonly index: number; readonly error: Error };

export interface ListOptions {
  readonly status?: EventStatus | undefined;
  readonly type?: string | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

export interface TenantStats {
  readonly byStatus: Partial<Record<EventStatus, number>>;
  readonly byType: Record<string, Partial<Record<EventStatus, number>>>;
  /** How late the oldest event that should have been claimed by now is, in ms (0 when none). */
  readonly oldestOverdueMs: number;
  /** Events of this tenant the index holds (scheduled, retrying, dispatched, running, dead). */
  readonly indexSize: number;
}

const LIVE: readonly EventStatus[] = ["scheduled", "dispatched", "running", "retrying", "dead"];

/**
 * Everything a client can do with events: schedule (one or many), read, list, reschedule, cancel,
 * stats, dead letters and replay. Writes go to the journal first and the index second, so an
 * accepted event is durable before it is visible to the dispatcher.
 */
export class EventService {
  private readonly newId = idFactory();

  constructor(private readonly deps: EngineDeps) {}

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
    const [result] = await this.store([event], now);
    if (!result!.ok) throw result!.error;
    return result!;
  }

  /** Schedules many events; each gets its own result, and one bad item does not fail the others. */
  async scheduleBatch(tenant: string, inputs: readonly unknown[]): Promise<BatchItemResult[]> {
    const now = this.deps.clock();
    const results: BatchItemResult[] = new Array(inputs.length);
    const valid: { event: NewEvent; index: number }[] = [];
    const seen = new Map<string, number>();
    inputs.forEach((input, index) => {
      try {
        const event = toNewEvent(input, tenant, now, this.rules(false), `events[${index}]`);
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
    const stored = await this.store(
      valid.map((v) => v.event),
      now,
    );
    stored.forEach((result, i) => {
      const index = valid[i]!.index;
      results[index] = result.ok ? result : { ...result, index };
    });
    return results;
  }

  private async store(events: readonly NewEvent[], now: number): Promise<BatchItemResult[]> {
    const { index, journal, config } = this.deps;
    const results: BatchItemResult[] = new Array(events.length);
    const toIndex: { event: NewEvent; position: number }[] = [];
    const repeats: JournalItem[] = [];
    if (journal) {
      const created =
        events.length === 1
          ? [await journal.create(events[0]!, index.shardOf(memberOf(events[0]!.tenant, events[0]!.id)))]
          : await journal.createMany(
              events.map((event) => ({ event, shard: index.shardOf(memberOf(event.tenant, event.id)) })),
            );
      created.forEach((result, position) => {
        const event = events[position]!;
        if (result.created) {
          toIndex.push({ event, position });
          return;
        }
        const existing = viewOf(result.existing, config.retry.maxAttempts);
        if (result.existing.fingerprint !== event.fingerprint) {
          results[position] = { ok: false, index: position, error: new IdempotencyConflictError(existing) };
          return;
        }
        results[position] = { ok: true, outcome: "existing", event: existing };
        // The first request may have crashed between the journal and the index: index it now.
        if (PENDING_STATUSES.includes(result.existing.status)) repeats.push(result.existing);
      });
    } else {
      events.forEach((event, position) => {
        toIndex.push({ event, position });
      });
    }

    if (repeats.length > 0) await index.restore(repeats.map(restoreEntryOf), now);
    const codes = await index.schedule(
      toIndex.map(({ event }) => ({
        member: memberOf(event.tenant, event.id),
        runAt: event.runAt,
        body: encodeBody(event, journal ? "journal" : { inline: event.payload }),
      })),
      now,
      await directDispatchHorizon(
        index.client,
        config.keyPrefix,
        now,
        config.lookAheadMs,
        toIndex.map(({ event }) => event.runAt),
      ),
      config.dispatchLeaseMs,
    );
    const dispatchNow: DispatchMessage[] = [];
    toIndex.forEach(({ event, position }, i) => {
      const member = memberOf(event.tenant, event.id);
      if (codes[i] === ScriptCode.DISPATCHED) {
        const payload = JSON.stringify(event.payload);
        dispatchNow.push({
          member,
          shard: index.shardOf(member),
          gen: 1,
          runAt: event.runAt,
          attempt: 0,
          ...(payload.length <= INLINE_PAYLOAD_LIMIT && { payload }),
        });
      }
      results[position] = {
        ok: true,
        outcome: "created",
        event: {
          id: event.id,
          type: event.type,
          status: "scheduled",
          runAt: event.runAt,
          attempts: 0,
          maxAttempts: event.maxAttempts ?? config.retry.maxAttempts,
          payload: event.payload,
          createdAt: event.createdAt,
          updatedAt: event.createdAt,
        },
      };
    });
    if (dispatchNow.length > 0) await this.send(dispatchNow, now);
    if (toIndex.length === 1) {
      const { event } = toIndex[0]!;
      this.deps.logger.info("event scheduled", {
        id: event.id,
        tenant: event.tenant,
        type: event.type,
        runAt: new Date(event.runAt).toISOString(),
      });
    } else if (toIndex.length > 1) {
      this.deps.logger.info("events scheduled", { count: toIndex.length, dispatchedNow: dispatchNow.length });
    }
    return results;
  }

  /** A failed send is logged, not thrown: the event is leased and the dispatcher sends it again. */
  private async send(messages: DispatchMessage[], now: number): Promise<void> {
    const report = await this.deps.transport.send(messages, now);
    for (const { message, reason } of report.failed) {
      this.deps.logger.warn("send failed; will redispatch when the lease expires", {
        event: message.member,
        reason,
      });
    }
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
    return overlay(viewOf(item, config.retry.maxAttempts), live);
  }

  /** A page of a tenant's events, newest first, filtered by live status and type. */
  async list(
    tenant: string,
    options: ListOptions,
  ): Promise<{ events: EventView[]; cursor: string | undefined }> {
    const journal = this.requireJournal("list");
    const events: EventView[] = [];
    let cursor = options.cursor;
    // Filters can leave a page short; read a few more pages before answering with a cursor.
    for (let pages = 0; pages < 5 && events.length < options.limit; pages++) {
      const page =
        options.status === "dead"
          ? await journal.listDead(tenant, options.limit, cursor)
          : await journal.listByTenant(tenant, options.limit, cursor);
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
        if (events.length < options.limit) events.push(view);
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
    const result = await index.cancel(member);
    if (result.code === ScriptCode.CONFLICT) throw new EventStateConflictError(id, result.status, "cancel");
    if (!journal) {
      if (result.code === ScriptCode.NOT_FOUND || !before) throw new EventNotFoundError(id);
      return { ...viewFromIndex(id, before, config.retry.maxAttempts), status: "cancelled" };
    }
    try {
      return viewOf(await journal.markCancelled(tenant, id, this.deps.clock()), config.retry.maxAttempts);
    } catch (error) {
      if (!(error instanceof JournalConditionError)) throw error;
      if (!error.existing) throw new EventNotFoundError(id);
      // Cancelling twice is harmless: the second call sees the first one's result.
      if (error.existing.status === "cancelled") return viewOf(error.existing, config.retry.maxAttempts);
      throw new EventStateConflictError(id, error.existing.status, "cancel");
    }
  }

  /** Moves a not-yet-started event to a new time (`{ runAt }` or `{ delaySeconds }`). */
  async reschedule(tenant: string, id: string, input: unknown): Promise<EventView> {
    const { index, journal, config } = this.deps;
    const now = this.deps.clock();
    const runAt = parseReschedule(input, now, config.horizonMs);
    const member = memberOf(tenant, id);
    const result = await index.reschedule(
      member,
      runAt,
      now,
      await directDispatchHorizon(index.client, config.keyPrefix, now, config.lookAheadMs, [runAt]),
      config.dispatchLeaseMs,
    );
    if (result.code === ScriptCode.CONFLICT)
      throw new EventStateConflictError(id, result.status, "reschedule");
    if (!journal) {
      if (result.code === ScriptCode.NOT_FOUND) throw new EventNotFoundError(id);
    } else {
      let item: JournalItem;
      try {
        item = await journal.reschedule(tenant, id, runAt, now);
      } catch (error) {
        if (!(error instanceof JournalConditionError)) throw error;
        if (!error.existing) throw new EventNotFoundError(id);
        throw new EventStateConflictError(id, error.existing.status, "reschedule");
      }
      // The journal has it pending but the index lost it: index it again at the new time.
      if (result.code === ScriptCode.NOT_FOUND) await index.restore([restoreEntryOf(item)], now);
    }
    if (result.code === ScriptCode.DISPATCHED) {
      await this.send(
        [{ member, shard: index.shardOf(member), gen: result.gen, runAt, attempt: result.attempt }],
        now,
      );
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
    const { index } = this.deps;
    const now = this.deps.clock();
    const member = memberOf(tenant, id);
    let item: JournalItem;
    try {
      item = await journal.replay(tenant, id, now, index.shardOf(member), now);
    } catch (error) {
      if (!(error instanceof JournalConditionError)) throw error;
      if (!error.existing) throw new EventNotFoundError(id);
      throw new EventStateConflictError(id, error.existing.status, "replay");
    }
    const revived = await index.revive(member, now);
    if (revived.code === ScriptCode.NOT_FOUND) await index.restore([restoreEntryOf(item)], now);
    return this.get(tenant, id);
  }

  /** Counts from the index's counters: O(shards), whatever the number of events. */
  async stats(tenant: string): Promise<TenantStats> {
    const now = this.deps.clock();
    const shards = await Promise.all(
      Array.from({ length: this.deps.index.shards }, (_, shard) => this.deps.index.shardStats(shard)),
    );
    const byStatus: Partial<Record<EventStatus, number>> = {};
    const byType: Record<string, Partial<Record<EventStatus, number>>> = {};
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
      if (shard.oldestDue !== undefined) oldestOverdueMs = Math.max(oldestOverdueMs, now - shard.oldestDue);
      if (shard.oldestLeaseDeadline !== undefined) {
        oldestOverdueMs = Math.max(oldestOverdueMs, now - shard.oldestLeaseDeadline);
      }
    }
    return { byStatus, byType, oldestOverdueMs, indexSize };
  }

  private requireJournal(operation: string) {
    if (!this.deps.journal) throw new JournalRequiredError(operation);
    return this.deps.journal;
  }
}
