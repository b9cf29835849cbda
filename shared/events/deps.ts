import type { HourglassConfig } from "../config.ts";
import { decodeBody, encodeBody } from "../engine/body.ts";
import { memberOf } from "../engine/keys.ts";
import type { LiveState, RedisIndex, RestoreEntry } from "../engine/redis-index.ts";
import type { HandlerRegistry } from "../handlers/registry.ts";
import type { JournalItem } from "../journal/item.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { FlowControl } from "../limits/flow-control.ts";
import type { Logger } from "../logger.ts";
import type { EngineMetrics } from "../metrics-store/recorder.ts";
import type { EventView } from "../model/event.ts";
import type { Notifier } from "../notifications/notifier.ts";
import type { Transport } from "../transport/transport.ts";
import { indexRunAt } from "./run-at.ts";

/** What the event service, dispatcher and worker are built from. */
export interface EngineDeps {
  readonly config: HourglassConfig;
  readonly index: RedisIndex;
  /** Absent only in the engine-only benchmark mode (HOURGLASS_JOURNAL=false). */
  readonly journal: EventJournal | undefined;
  readonly transport: Transport;
  readonly registry: HandlerRegistry;
  readonly logger: Logger;
  /** Epoch ms. Injected so tests can steer time. */
  readonly clock: () => number;
  /** Per-minute throughput and lateness for the dashboard and `GET /v1/metrics`; optional in tests. */
  readonly metrics?: EngineMetrics;
  /** Every transition is handed to it (shared/notifications); absent means none are published. */
  readonly notifier?: Notifier;
  /** Flow control (type limits, tenant caps); absent in tests that build an engine without it. */
  readonly flow?: FlowControl;
}

/** The index entry that re-creates a journal item's pending state. */
export function restoreEntryOf(item: JournalItem): RestoreEntry {
  return {
    member: memberOf(item.tenant, item.id),
    runAt: indexRunAt(item.runAt),
    body: encodeBody(
      { type: item.type, maxAttempts: item.maxAttempts, backoff: item.backoff, callbacks: item.callbacks },
      "journal",
    ),
    attempt: item.attempts,
    status: item.status === "dead" ? "dead" : item.status === "retrying" ? "retrying" : "scheduled",
    version: item.version ?? 0,
  };
}

/**
 * The journal's view, with the index's live status, attempt and time laid over it. A finished
 * event is final in the journal; an index entry that still says otherwise is a leftover of a crash
 * between the two writes (the dispatcher removes it when its lease runs out), so it is ignored.
 */
export function overlay(view: EventView, live: LiveState | undefined): EventView {
  if (!live || view.status === "succeeded" || view.status === "dead" || view.status === "cancelled")
    return view;
  return {
    ...view,
    status: live.status,
    attempts: live.attempt,
    runAt: live.runAt,
    ...(live.heldBy && { heldBy: live.heldBy }),
  };
}

/** A view built from the index alone (engine-only mode). */
export function viewFromIndex(id: string, live: LiveState, defaultMaxAttempts: number): EventView {
  // Only used without a journal, where the payload is always inline.
  const body = decodeBody(live.body);
  return {
    id,
    type: body.type,
    status: live.status,
    runAt: live.runAt,
    attempts: live.attempt,
    maxAttempts: body.maxAttempts ?? defaultMaxAttempts,
    payload: body.payload,
    createdAt: 0,
    updatedAt: 0,
    ...(live.heldBy && { heldBy: live.heldBy }),
  };
}
