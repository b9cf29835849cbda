import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import pMap from "p-map";
import { type DispatchMessage, encodeMessage } from "../model/message.ts";
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

interface Outgoing {
  readonly message: DispatchMessage;
  readonly body: string;
  readonly bytes: number;
}

/**
 * Sends dispatched events to the SQS work queue, in batches packed by bytes under SQS's limits,
 * several calls in flight. A batch that fails is sent again one message at a time, each without
 * its inline payload (the worker reads it from the journal), so one entry SQS refuses cannot take
 * nine others down with it, again after every lease.
 */
export class SqsTransport implements Transport {
  /**
   * @param deliverAheadMs how long before its due time a message becomes visible (config
   *   `deliverAheadMs`); the worker holds it until then. @default 0
   */
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly inFlight = 8,
    private readonly deliverAheadMs = 0,
  ) {}

  async send(messages: readonly DispatchMessage[], now: number): Promise<SendReport> {
    const batches = pack(messages.map(outgoing));
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
              DelaySeconds: delaySecondsFor(entry.message.runAt, now, this.deliverAheadMs),
            })),
          }),
        );
        sent += reply.Successful?.length ?? 0;
        refused = (reply.Failed ?? []).map((failure) => ({
          entry: batch[Number(failure.Id)]!,
          reason: failure.Message ?? failure.Code ?? "failed",
        }));
      } catch (error) {
        refused = batch.map((entry) => ({ entry, reason: (error as Error).message }));
      }
      for (const { entry, reason } of refused) {
        const single = await this.sendAlone(entry.message, now);
        if (single === undefined) sent++;
        else failed.push({ message: entry.message, reason: `${reason}; alone: ${single}` });
      }
    };
    await pMap(batches, sendBatch, { concurrency: this.inFlight });
    return { sent, failed };
  }

  /** One message on its own, without its inline payload. Returns why it failed, or undefined. */
  private async sendAlone(message: DispatchMessage, now: number): Promise<string | undefined> {
    const { payload: _, ...bare } = message;
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl,
          MessageBody: encodeMessage(bare),
          DelaySeconds: delaySecondsFor(message.runAt, now, this.deliverAheadMs),
        }),
      );
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
}

/** The message's body; without its inline payload when that would make it too big for SQS. */
function outgoing(message: DispatchMessage): Outgoing {
  let body = encodeMessage(message);
  let bytes = Buffer.byteLength(body, "utf8");
  if (bytes > SQS_MAX_MESSAGE_BYTES && message.payload !== undefined) {
    const { payload: _, ...bare } = message;
    body = encodeMessage(bare);
    bytes = Buffer.byteLength(body, "utf8");
  }
  return { message, body, bytes };
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
