import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { Logger } from "../logger.ts";

/**
 * What Lambda's SQS event source does, for the local runner: long-polls the queue, hands each batch
 * to the same handler the worker Lambda exports, and deletes what did not fail. Failed messages
 * stay invisible until their visibility timeout, as in Lambda.
 */
export class QueuePoller {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly batches = new Set<Promise<void>>();
  private inFlight = 0;

  /**
   * @param concurrency long polls at a time
   * @param maxInFlight messages being processed at once; receiving pauses above it. A batch does not
   *   hold its poller until it finishes, so one slow message (or one waiting for its due time)
   *   does not delay the messages behind it.
   */
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly handle: (event: SQSEvent) => Promise<SQSBatchResponse>,
    private readonly logger: Logger,
    private readonly concurrency = 4,
    private readonly maxInFlight = 500,
    private readonly waitSeconds = 1,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = Array.from({ length: this.concurrency }, () => this.loop());
  }

  /** Stops receiving, then waits for the batches already received to finish. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    await Promise.all(this.batches);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      if (this.inFlight >= this.maxInFlight) {
        await Promise.race(this.batches);
        continue;
      }
      try {
        const { Messages } = await this.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: this.waitSeconds,
            MessageSystemAttributeNames: ["All"],
          }),
        );
        if (!Messages?.length) continue;
        this.inFlight += Messages.length;
        const batch = this.process(Messages).finally(() => {
          this.inFlight -= Messages.length;
          this.batches.delete(batch);
        });
        this.batches.add(batch);
      } catch (error) {
        if (!this.running) return;
        this.logger.warn("queue poll failed; retrying", { error });
        await new Promise((done) => setTimeout(done, 500));
      }
    }
  }

  private async process(messages: Message[]): Promise<void> {
    try {
      const response = await this.handle({ Records: messages.map((m) => toSqsRecord(m, this.queueUrl)) });
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      const done = messages.filter((m) => !failed.has(m.MessageId!));
      if (done.length === 0) return;
      const reply = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
      if (reply.Failed?.length) {
        this.logger.warn("delete failed; message will be redelivered", { count: reply.Failed.length });
      }
    } catch (error) {
      // Not deleted: the messages come back after their visibility timeout, as with Lambda.
      this.logger.warn("batch failed; messages will be redelivered", { error });
    }
  }
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
