import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import type { Logger } from "../logger.ts";
import { detailOf, type Transition, type TransitionNotice } from "./model.ts";
import type { NotificationSink } from "./notifier.ts";

/** PutEvents takes at most 10 entries and 256 KB per request. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;
/** Entries EventBridge refused (throttling, an internal failure) are sent again this many times. */
const RETRIES = 3;
/** Requests in flight at once per batch. */
const PARALLEL = 4;

/** `detail-type` of each transition: rules route on it (`"detail-type": ["Event Dead"]`). */
export function detailTypeOf(notice: TransitionNotice): string {
  const name = notice.transition;
  return `Event ${name.charAt(0).toUpperCase()}${name.slice(1)}`;
}

/**
 * Puts the notices of the transitions the deployment asked for on an EventBridge bus, one entry
 * each, `source` = the configured source, `detail-type` per transition, `detail` = the
 * notification. EventBridge bills per entry, so requests carry as many as they take (10 entries,
 * 256 KB): a batch of n notices is ceil(n/10) requests. Entries EventBridge reports as failed
 * (FailedEntryCount) are retried with backoff, then counted as failed.
 */
export class EventBridgeSink implements NotificationSink {
  readonly name = "eventbridge";
  readonly transitions: ReadonlySet<Transition>;

  constructor(
    transitions: Iterable<Transition>,
    private readonly client: EventBridgeClient,
    private readonly busName: string,
    private readonly source: string,
    private readonly logger: Logger,
    private readonly sleep: (ms: number) => Promise<void> = (ms) =>
      new Promise((resolve) => setTimeout(resolve, ms)),
  ) {
    this.transitions = new Set(transitions);
  }

  async deliver(notices: readonly TransitionNotice[]): Promise<number> {
    const requests = chunk(notices.map((notice) => this.entryOf(notice)));
    let failed = 0;
    for (let i = 0; i < requests.length; i += PARALLEL) {
      const results = await Promise.all(requests.slice(i, i + PARALLEL).map((r) => this.put(r)));
      failed += results.reduce((sum, n) => sum + n, 0);
    }
    return failed;
  }

  private entryOf(notice: TransitionNotice): PutEventsRequestEntry {
    return {
      EventBusName: this.busName,
      Source: this.source,
      DetailType: detailTypeOf(notice),
      Detail: JSON.stringify(detailOf(notice)),
      Time: new Date(notice.time),
    };
  }

  /** One request; returns how many of its entries were still refused after the retries. */
  private async put(entries: PutEventsRequestEntry[]): Promise<number> {
    let pending = entries;
    for (let attempt = 0; ; attempt++) {
      let refused: { entry: PutEventsRequestEntry; code: string }[];
      try {
        const reply = await this.client.send(new PutEventsCommand({ Entries: pending }));
        if (!reply.FailedEntryCount) return 0;
        // Results come back in the order of the entries; failed ones carry an ErrorCode.
        refused = (reply.Entries ?? []).flatMap((result, i) =>
          result.ErrorCode ? [{ entry: pending[i]!, code: result.ErrorCode }] : [],
        );
      } catch (error) {
        if (attempt >= RETRIES) throw error;
        await this.sleep(50 * 2 ** attempt);
        continue;
      }
      if (attempt >= RETRIES || refused.length === 0) {
        if (refused.length > 0)
          this.logger.warn("EventBridge refused notifications", {
            count: refused.length,
            error: refused[0]!.code,
          });
        return refused.length;
      }
      pending = refused.map((r) => r.entry);
      await this.sleep(50 * 2 ** attempt);
    }
  }
}

/** An entry's size as EventBridge counts it (UTF-8 bytes of its strings, 14 for a time). */
export function entrySize(entry: PutEventsRequestEntry): number {
  let size = entry.Time ? 14 : 0;
  for (const text of [entry.Source, entry.DetailType, entry.Detail, ...(entry.Resources ?? [])])
    if (text) size += Buffer.byteLength(text, "utf8");
  return size;
}

/** Groups entries into requests of at most 10 entries and 256 KB, in order. */
export function chunk(entries: readonly PutEventsRequestEntry[]): PutEventsRequestEntry[][] {
  const requests: PutEventsRequestEntry[][] = [];
  let current: PutEventsRequestEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = entrySize(entry);
    if (
      current.length === PUT_EVENTS_MAX_ENTRIES ||
      (current.length > 0 && bytes + size > PUT_EVENTS_MAX_BYTES)
    ) {
      requests.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
