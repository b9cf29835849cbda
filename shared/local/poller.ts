import { type Message, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { Logger } from "../logger.ts";
import { eventsInBody } from "../model/message.ts";
import { AckBuffer } from "./acks.ts";
import type { TrailingOutcomes } from "./outcome-gate.ts";

/**
 * What Lambda's SQS event source does, for the local runner: long-polls the queue, hands each
 * message to the same handler the worker Lambda exports, and deletes what did not fail, in batches
 * of up to ten across receives. Failed messages stay invisible until their visibility timeout, as
 * in Lambda.
 *
 * Receiving is decoupled from handling: a poller goes straight back to the queue once it has
 * handed its messages over, and each message holds its slot in `maxInFlight` until its outcome is
 * recorded and its delete queued, not until the slowest message of its receive is done. So one
 * slow message (or one waiting for its due time) holds back neither the messages behind it nor
 * the ones it arrived with. With `outcomes` (a gate the worker's outcomes wait at while the queue
 * has a backlog), a message whose handler has returned and whose outcome waits there no longer
 * holds a slot either: the slots count handlers and outcomes being written, and the gate bounds
 * the outcomes it holds. With `worker`, messages waiting for their due time (delivered ahead) do
 * not hold a slot either, up to four times `maxInFlight` of them: a queue whose visible messages
 * are mostly not yet due must not keep a message due sooner from being received. Each takes a slot
 * when its wait ends, before it starts, and before any new receive, so `maxInFlight` still bounds
 * the handlers running at once.
 *
 * Slots count events, not messages: a message may hold several events due in the same second (a
 * bundle), each of which takes its own slot and, with `worker`, gives it back as its own work ends
 * (the message is deleted once its last event is done). Without `worker`, a bundle's events keep
 * their slots until the last one is done.
 */
export class QueuePoller {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly handling = new Set<Promise<void>>();
  /** Events in the messages being handled (a message may hold several: a bundle). */
  private handlingEvents = 0;
  private readonly acks: AckBuffer;
  /** Messages whose wait for their due time has ended, waiting for a slot to start in. */
  private askingForSlot = 0;
  /** Slots the receives in flight may fill: each asks for no more messages than the room it holds. */
  private reserved = 0;
  /** The most events the sender puts in one message: what a receive reserves per message it asks for. */
  private readonly eventsPerMessage: number;
  /** Resolved when a slot frees (a message finished, or its outcome went to wait at the gate). */
  private slotFreed: { promise: Promise<void>; resolve: () => void } | undefined;
  /** Messages received, the events in them, and messages whose handler failed (left for redelivery). */
  readonly counts = { received: 0, events: 0, failed: 0 };

  /**
   * @param concurrency long polls at a time
   * @param maxInFlight events received and not yet finished; receiving pauses above it, and a
   *   receive asks for no more messages than the room left holds
   * @param eventsPerMessage the most events the sender puts in one message (config
   *   `eventsPerMessage`) @default 1
   */
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly handle: (event: SQSEvent) => Promise<SQSBatchResponse>,
    private readonly logger: Logger,
    private readonly concurrency = 4,
    private readonly maxInFlight = 500,
    private readonly waitSeconds = 1,
    private readonly outcomes?: TrailingOutcomes,
    private readonly worker?: WaitingMessages,
    eventsPerMessage = 1,
  ) {
    // The sender's setting, not what bodies claim: one body's count must not change the pacing.
    this.eventsPerMessage = Math.max(1, eventsPerMessage);
    this.acks = new AckBuffer(sqs, queueUrl, logger);
    if (outcomes) outcomes.onHold = () => this.freeSlot();
    if (worker) {
      worker.onWaiting = () => this.freeSlot();
      worker.onProcessed = () => this.freeSlot();
      worker.untilSlot = () => this.slotForDue();
    }
  }

  /** Messages deleted after their outcome was recorded. */
  get deleted(): number {
    return this.acks.deleted;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.outcomes?.open();
    this.loops = Array.from({ length: this.concurrency }, () => this.loop());
  }

  /** Stops receiving, waits for the messages already received to finish, then for their deletes. */
  async stop(): Promise<void> {
    this.running = false;
    this.outcomes?.close();
    this.freeSlot();
    await Promise.all(this.loops);
    await Promise.all(this.handling);
    await this.acks.drain();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      // Messages whose wait ended take the slots first.
      const room = this.maxInFlight - this.busySlots() - this.reserved;
      if (room <= 0 || this.askingForSlot > 0) {
        this.slotFreed ??= withResolvers();
        await this.slotFreed.promise;
        continue;
      }
      // As many messages as the room holds, so a receive of bundles does not run far past
      // `maxInFlight` (ten messages of ten events would be 100 events), and the other pollers see
      // the room this one asked for as taken until its events are counted.
      const take = Math.max(1, Math.min(RECEIVE_LIMIT, Math.floor(room / this.eventsPerMessage)));
      const reservation = take * this.eventsPerMessage;
      this.reserved += reservation;
      let messages: Message[];
      try {
        const { Messages } = await this.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.queueUrl,
            MaxNumberOfMessages: take,
            WaitTimeSeconds: this.waitSeconds,
            MessageSystemAttributeNames: ["All"],
          }),
          // A receive that never answers would hold its room, and so every poller, for good.
          { abortSignal: AbortSignal.timeout((this.waitSeconds + RECEIVE_GRACE_SECONDS) * 1000) },
        );
        messages = Messages ?? [];
      } catch (error) {
        this.release(reservation);
        // No word on the queue: the outcomes need not wait for one.
        this.outcomes?.backlog(false);
        if (!this.running) return;
        this.logger.warn("queue poll failed; retrying", { error });
        await new Promise((done) => setTimeout(done, 500));
        continue;
      }
      // Given back in the same turn as its events start counting (below), so no poller woken in
      // between sees the room twice.
      this.release(reservation);
      // A full receive of ten: the queue holds more than this consumer takes, so outcomes may
      // wait. Fewer than asked: no backlog. A full receive of fewer (the room was small) says
      // nothing either way, so the last word stands.
      if (messages.length < take) this.outcomes?.backlog(false);
      else if (take === RECEIVE_LIMIT) this.outcomes?.backlog(true);
      for (const message of messages) {
        this.counts.received++;
        const events = eventsInBody(message.Body ?? "");
        this.counts.events += events;
        this.handlingEvents += events;
        const handled: Promise<void> = this.process(message).finally(() => {
          this.handling.delete(handled);
          this.handlingEvents -= events;
          this.freeSlot();
        });
        this.handling.add(handled);
      }
    }
  }

  /**
   * Messages starting, in their handlers, or being recorded: held outcomes are not, nor messages
   * waiting for their due time (beyond `WAITING_PER_SLOT` times `maxInFlight` of them, they are).
   */
  private busySlots(): number {
    const waiting = Math.min(this.worker?.waiting ?? 0, WAITING_PER_SLOT * this.maxInFlight);
    // With the worker at hand, an event's slot frees as its own work ends (`processing`), not as
    // its message's last event does: the handler starts `process` in the same turn as the receive.
    const events = this.worker ? this.worker.processing : this.handlingEvents;
    return events - (this.outcomes?.held ?? 0) - waiting - this.askingForSlot;
  }

  /** Resolves once a message whose wait for its due time has ended may start (it then holds a slot). */
  private async slotForDue(): Promise<void> {
    this.askingForSlot++;
    try {
      while (this.running && this.busySlots() >= this.maxInFlight) {
        this.slotFreed ??= withResolvers();
        await this.slotFreed.promise;
      }
    } finally {
      // In the same turn as the check: the next one asking sees this slot taken.
      this.askingForSlot--;
      // The receive loop waits while any message asks; room left is its to take.
      if (this.askingForSlot === 0 && this.busySlots() < this.maxInFlight) this.freeSlot();
    }
  }

  /** Gives back a receive's reservation; a poller waiting for that room may go. */
  private release(reservation: number): void {
    this.reserved -= reservation;
    this.freeSlot();
  }

  private freeSlot(): void {
    this.slotFreed?.resolve();
    this.slotFreed = undefined;
  }

  /** Never throws: a message not deleted comes back after its visibility timeout, as with Lambda. */
  private async process(message: Message): Promise<void> {
    try {
      const response = await this.handle({ Records: [toSqsRecord(message, this.queueUrl)] });
      // The handler returns only once the outcome is recorded; a failure listed means it was not.
      if (response.batchItemFailures.length === 0) this.acks.add(message.ReceiptHandle!);
      else this.counts.failed++;
    } catch (error) {
      this.counts.failed++;
      this.logger.warn("message failed; it will be redelivered", { messageId: message.MessageId, error });
    }
  }
}

/** SQS hands out at most ten messages a receive. */
const RECEIVE_LIMIT = 10;

/**
 * Past its long poll, how long a receive may take before it is given up. What it had received
 * comes back after the visibility timeout.
 */
const RECEIVE_GRACE_SECONDS = 20;

/** Messages waiting for their due time that do not count against `maxInFlight`, per slot. */
const WAITING_PER_SLOT = 4;

/** The worker's count of messages waiting for their due time, its call when one starts to, and the slot it awaits when the wait ends. */
export interface WaitingMessages {
  readonly waiting: number;
  /** Events handed to the worker and not yet returned. */
  readonly processing: number;
  onProcessed: (() => void) | undefined;
  onWaiting: (() => void) | undefined;
  untilSlot: (() => Promise<void>) | undefined;
}

function withResolvers(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A received message in the shape Lambda's SQS event source hands to a function. */
export function toSqsRecord(message: Message, queueUrl: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? "",
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? "1",
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? "local",
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: `arn:aws:sqs:local:000000000000:${queueUrl.split("/").pop()}`,
    awsRegion: process.env.AWS_REGION ?? "us-east-1",
  };
}
