import { ScriptCode } from "../engine/codes.ts";
import { memberOf } from "../engine/keys.ts";
import type { IndexEntry } from "../engine/redis-index.ts";
import { type JournalItem, PENDING_STATUSES } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { NewEvent, ScheduleResult } from "../model/event.ts";
import { type DispatchMessage, withInlinePayload } from "../model/message.ts";
import { notify, notifyDispatched } from "../notifications/publish.ts";
import type { EngineDeps } from "./deps.ts";
import { checkDirectSends, type DirectSend } from "./direct-send.ts";
import { entryOf, restoreEntryOf } from "./entries.ts";
import { IdempotencyConflictError } from "./errors.ts";
import { nearMsOf } from "./horizon.ts";
import { directDispatchHorizon } from "./pause.ts";
import { lowerForWrites } from "./recovery.ts";
import { settleExisting } from "./reused-ids.ts";
import { sendOrRelease } from "./send.ts";
import { judgeTombstones } from "./tombstones.ts";
import { createdViewOf, viewOf } from "./views.ts";

export type BatchItemResult =
  | (ScheduleResult & { readonly ok: true })
  | { readonly ok: false; readonly index: number; readonly error: Error };

/** A new event the journal accepted, and its place in the caller's list. */
interface Accepted {
  readonly event: NewEvent;
  readonly position: number;
}

/**
 * Intake: stores validated new events, the journal first and the index second, so an accepted
 * event is durable before the dispatcher can see it. An id the journal already holds answers with
 * that event (or an idempotency conflict); an event due within the look-ahead goes straight to the
 * queue instead of waiting for the next dispatcher tick.
 */
export class EventIntake {
  constructor(private readonly deps: EngineDeps) {}

  /** One result per event, in order; one event's refusal does not fail the others. */
  async store(events: readonly NewEvent[], now: number): Promise<BatchItemResult[]> {
    const { index, journal, config } = this.deps;
    const results: BatchItemResult[] = new Array(events.length);
    // Events due in the past may fall below the recovery sweep's watermark: lowered around the
    // journal write, so a crash before the index write below leaves them to the sweep.
    const members = events.map((event) => ({ member: memberOf(event.tenant, event.id), runAt: event.runAt }));
    await lowerForWrites(this.deps, members, now);
    const { toIndex, repeats } = journal
      ? await this.journalFirst(journal, events, results)
      : { toIndex: events.map((event, position) => ({ event, position })), repeats: [] };
    await lowerForWrites(
      this.deps,
      toIndex.map(({ position }) => members[position]!),
      now,
    );

    // Far events (beyond the near horizon) stay in the journal only: the scripts leave them out
    // (FAR), and the dispatcher's loader promotes them ahead of time (docs/horizon.md).
    const nearMs = nearMsOf(config, journal !== undefined);
    if (repeats.length > 0) await index.restore(repeats.map(restoreEntryOf), now, { nearMs });
    const entries: IndexEntry[] = toIndex.map(({ event }) => entryOf(event, journal !== undefined));
    // While dispatch is paused nothing is sent directly: every entry waits in the index.
    const horizon = await directDispatchHorizon(
      index.client,
      config.keyPrefix,
      now,
      config.lookAheadMs,
      entries.map((entry) => entry.runAt),
    );
    const codes = await index.schedule(entries, now, horizon, config.dispatchLeaseMs, nearMs);
    // Journal items found changed by another call, by member: the create answers with them.
    const settled = new Map<string, JournalItem>();
    if (journal) {
      // An entry under an id the journal has just created: the event's own (a racing reschedule
      // or restore wrote it) or an older event's leftover; the journal's current item decides.
      const stale = codes.flatMap((code, i) => (code === ScriptCode.EXISTS ? [i] : []));
      if (stale.length > 0) {
        const outcomes = await settleExisting(
          this.deps,
          journal,
          stale.map((i) => entries[i]!.member),
          now,
          nearMs,
        );
        stale.forEach((i, n) => {
          const { code, moved } = outcomes[n]!;
          codes[i] = code;
          if (moved) settled.set(entries[i]!.member, moved);
        });
      }
    }
    // Kept out by a cancel's tombstone: a stale one (its cancel's journal write failed long ago)
    // is dropped and the event indexed; a cancel that may still land wins now (tombstones.ts).
    const tombstoned = journal ? codes.flatMap((code, i) => (code === ScriptCode.TOMBSTONED ? [i] : [])) : [];
    if (tombstoned.length > 0) {
      const verdicts = await judgeTombstones(
        this.deps,
        tombstoned.map((i) => entries[i]!.member),
        now,
      );
      const stale = tombstoned.filter((i, n) => {
        const verdict = verdicts[n]!;
        if (!verdict.stale) settled.set(entries[i]!.member, verdict.item);
        return verdict.stale;
      });
      if (stale.length > 0) {
        const again = await index.schedule(
          stale.map((i) => entries[i]!),
          now,
          horizon,
          config.dispatchLeaseMs,
          nearMs,
        );
        stale.forEach((i, n) => {
          codes[i] = again[n]!;
        });
      }
    }
    // Leased for a direct send: checked against the journal first, which may have moved on.
    const direct = codes.flatMap((code, i) => (code === ScriptCode.DISPATCHED ? [i] : []));
    const sends = new Map<number, DirectSend>();
    if (journal && direct.length > 0) {
      const checked = await checkDirectSends(
        this.deps,
        journal,
        direct.map((i) => toIndex[i]!.event),
        now,
        horizon,
      );
      for (const [n, i] of direct.entries()) sends.set(i, checked[n]!);
    }
    await this.announce(toIndex, codes, { settled, sends }, results, now);
    return results;
  }

  /**
   * Writes the journal items. A repeat of an id answers with the event it names (or, with other
   * content, an idempotency conflict) in `results`; a pending repeat is indexed again, since the
   * first request may have crashed between the journal and the index. An event whose write failed
   * while others of the batch were written gets that failure as its result.
   */
  private async journalFirst(
    journal: EventJournal,
    events: readonly NewEvent[],
    results: BatchItemResult[],
  ): Promise<{ toIndex: Accepted[]; repeats: JournalItem[] }> {
    const { index, config } = this.deps;
    const toIndex: Accepted[] = [];
    const repeats: JournalItem[] = [];
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
      if ("error" in result) {
        // Not known to be durable: answered as failed, and never indexed or announced.
        results[position] = { ok: false, index: position, error: result.error };
        return;
      }
      const existing = viewOf(result.existing, config.retry.maxAttempts);
      if (result.existing.fingerprint !== event.fingerprint) {
        results[position] = { ok: false, index: position, error: new IdempotencyConflictError(existing) };
        return;
      }
      results[position] = { ok: true, outcome: "existing", event: existing };
      if (PENDING_STATUSES.includes(result.existing.status)) repeats.push(result.existing);
    });
    const failed = created.flatMap((result) => ("error" in result ? [result.error] : []));
    if (failed.length > 0) {
      this.deps.logger.error("events not stored", { count: failed.length, error: failed[0] });
    }
    return { toIndex, repeats };
  }

  /**
   * The created events' results, notifications and metrics; those the index dispatched at once
   * are sent now (a failed send is given back to the next dispatcher tick, see send.ts).
   */
  private async announce(
    toIndex: readonly Accepted[],
    codes: readonly ScriptCode[],
    checks: { settled: ReadonlyMap<string, JournalItem>; sends: ReadonlyMap<number, DirectSend> },
    results: BatchItemResult[],
    now: number,
  ): Promise<void> {
    const { index, config } = this.deps;
    for (const { event } of toIndex) this.deps.metrics?.created(event.tenant, event.type);
    const dispatchNow: DispatchMessage[] = [];
    toIndex.forEach(({ event, position }, i) => {
      const member = memberOf(event.tenant, event.id);
      const check = checks.sends.get(i);
      const moved = check && check.send !== "as-created" ? check.item : checks.settled.get(member);
      if (moved) {
        // The journal moved on meanwhile (a reschedule, a cancel, a run): answered as it stands.
        if (PENDING_STATUSES.includes(moved.status))
          notify(this.deps, "scheduled", { ...event, runAt: moved.runAt, attempt: moved.attempts });
      } else if (codes[i] !== ScriptCode.EXISTS) notify(this.deps, "scheduled", { ...event, attempt: 0 });
      if (codes[i] === ScriptCode.DISPATCHED && check?.send !== "no") {
        const leased = check?.send === "synced" ? check : { gen: 1, runAt: event.runAt, attempt: 0 };
        const message = {
          member,
          shard: index.shardOf(member),
          gen: leased.gen,
          runAt: leased.runAt,
          attempt: leased.attempt,
        };
        dispatchNow.push(withInlinePayload(message, JSON.stringify(event.payload)));
        notifyDispatched(this.deps, [message], event.type);
      }
      if (moved) {
        results[position] = { ok: true, outcome: "created", event: viewOf(moved, config.retry.maxAttempts) };
        return;
      }
      results[position] = {
        ok: true,
        outcome: "created",
        event: createdViewOf(event, config.retry.maxAttempts),
      };
    });
    await sendOrRelease(this.deps, dispatchNow, now);
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
  }
}
