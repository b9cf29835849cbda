import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import pMap from "p-map";
import { bundleOverheadBytes, type DispatchMessage, encodeBundle, encodeMessage } from "../model/message.ts";
import { delaySecondsFor, type SendReport, type Transport } from "./transport.ts";

/**
 * SQS's own limits, enforced here because the local emulator is more lenient (it takes 1 MiB
 * bodies): SendMessageBatch takes at most 10 entries, and a message, like the sum of a batch's
 * messages, at most 256 KiB, counted in UTF-8 bytes. (AWS has since raised the message size to
 * 1 MiB; 256 KiB is what every SQS, LocalStack included, accepts.)
 */
export const SQS_BATCH_ENTRIES = 10;
export const SQS_MAX_MESSAGE_BYTES = 262_144;
export const SQS_MAX_BATCH_BYTES = 262_144;

/** One dispatched event, encoded. */
interface Encoded {
  readonly message: DispatchMessage;
  readonly body: string;
  readonly bytes: number;
  readonly delaySeconds: number;
}

/** One queue message: one event, or several due in the same second (a bundle). */
interface Outgoing {
  readonly messages: readonly DispatchMessage[];
  readonly body: string;
  readonly bytes: number;
  readonly delaySeconds: number;
}

/**
 * Sends dispatched events to the SQS work queue, in batches packed by bytes under SQS's limits,
 * several calls in flight. With `eventsPerMessage` above 1, events that become visible in the same
 * second share a queue message (the worker runs each on its own and the message goes back to the
 * queue only if one of them could not be recorded; docs/local.md). A batch that fails is sent
 * again one event at a time, each without its inline payload (the worker reads it from the
 * journal), so one entry SQS refuses cannot take others down with it, again after every lease.
 */
export class SqsTransport implements Transport {
  /**
   * @param deliverAheadMs how long before its due time a message becomes visible (config
   *   `deliverAheadMs`); the worker holds it until then. @default 0
   * @param eventsPerMessage events that may share one queue message (config `eventsPerMessage`).
   *   @default 1
   */
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly inFlight = 8,
    private readonly deliverAheadMs = 0,
    private readonly eventsPerMessage = 1,
  ) {}

  async send(messages: readonly DispatchMessage[], now: number): Promise<SendReport> {
    const encoded = messages.map((message) =>
      encode(message, delaySecondsFor(message.runAt, now, this.deliverAheadMs)),
    );
    const batches = pack(bundle(encoded, this.eventsPerMessage));
    let sent = 0;
    const failed: { message: DispatchMessage; reason: string }[] = [];
    const sendBatch = async (batch: Outgoing[]) => {
      let refused: { entry: Outgoing; reason: string }[];
      try {
        const reply = await this.client.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: batch.map((entry, i) => ({
              Id: String(i),
              MessageBody: entry.body,
              DelaySeconds: entry.delaySeconds,
            })),
          }),
        );
        for (const success of reply.Successful ?? []) sent += batch[Number(success.Id)]!.messages.length;
        refused = (reply.Failed ?? []).map((failure) => ({
          entry: batch[Number(failure.Id)]!,
          reason: failure.Message ?? failure.Code ?? "failed",
        }));
      } catch (error) {
        refused = batch.map((entry) => ({ entry, reason: (error as Error).message }));
      }
      for (const { entry, reason } of refused) {
        for (const message of entry.messages) {
          const single = await this.sendAlone(message, entry.delaySeconds);
          if (single === undefined) sent++;
          else failed.push({ message, reason: `${reason}; alone: ${single}` });
        }
      }
    };
    await pMap(batches, sendBatch, { concurrency: this.inFlight });
    return { sent, failed };
  }

  /** One event on its own, without its inline payload. Returns why it failed, or undefined. */
  private async sendAlone(message: DispatchMessage, delaySeconds: number): Promise<string | undefined> {
    const { payload: _, ...bare } = message;
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl,
          MessageBody: encodeMessage(bare),
          DelaySeconds: delaySeconds,
        }),
      );
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
}

/** The event's encoding; without its inline payload when that would make it too big for SQS. */
function encode(message: DispatchMessage, delaySeconds: number): Encoded {
  let body = encodeMessage(message);
  let bytes = Buffer.byteLength(body, "utf8");
  if (bytes > SQS_MAX_MESSAGE_BYTES && message.payload !== undefined) {
    const { payload: _, ...bare } = message;
    body = encodeMessage(bare);
    bytes = Buffer.byteLength(body, "utf8");
  }
  return { message, body, bytes, delaySeconds };
}

/**
 * Puts events with the same delay and due in the same second into shared messages of at most
 * `perMessage` events and SQS's message size, in the order they came (a message is closed when it
 * is full). The due second as well as the delay: delivered ahead, every event due within the
 * look-ahead has delay 0, and a message mixing due times would keep its early events' message in
 * flight until its latest one is done.
 */
function bundle(events: readonly Encoded[], perMessage: number): Outgoing[] {
  if (perMessage <= 1) return events.map((e) => toOutgoing([e], e.bytes));
  const out: Outgoing[] = [];
  const open = new Map<string, { events: Encoded[]; bytes: number }>();
  for (const event of events) {
    const key = `${event.delaySeconds}:${Math.floor(event.message.runAt / 1000)}`;
    const group = open.get(key);
    if (group) {
      const count = group.events.length + 1;
      if (group.bytes + event.bytes + bundleOverheadBytes(count) <= SQS_MAX_MESSAGE_BYTES) {
        group.events.push(event);
        group.bytes += event.bytes;
        if (count === perMessage) {
          out.push(toOutgoing(group.events, group.bytes));
          open.delete(key);
        }
        continue;
      }
      out.push(toOutgoing(group.events, group.bytes));
    }
    open.set(key, { events: [event], bytes: event.bytes });
  }
  for (const group of open.values()) out.push(toOutgoing(group.events, group.bytes));
  return out;
}

/** `bytes`: the events' own, without the bundle's overhead. */
function toOutgoing(events: readonly Encoded[], bytes: number): Outgoing {
  return {
    messages: events.map((e) => e.message),
    body: encodeBundle(events.map((e) => e.body)),
    bytes: bytes + bundleOverheadBytes(events.length),
    delaySeconds: events[0]!.delaySeconds,
  };
}

/** Fills batches in order up to 10 entries and 256 KiB each. */
function pack(entries: readonly Outgoing[]): Outgoing[][] {
  const batches: Outgoing[][] = [];
  let current: Outgoing[] = [];
  let bytes = 0;
  for (const entry of entries) {
    if (
      current.length > 0 &&
      (current.length === SQS_BATCH_ENTRIES || bytes + entry.bytes > SQS_MAX_BATCH_BYTES)
    ) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
