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

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly handle: (event: SQSEvent) => Promise<SQSBatchResponse>,
    private readonly logger: Logger,
    private readonly concurrency = 4,
    private readonly waitSeconds = 1,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = Array.from({ length: this.concurrency }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (this.running) {
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
        const response = await this.handle({ Records: Messages.map((m) => this.toRecord(m)) });
        const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        const done = Messages.filter((m) => !failed.has(m.MessageId!));
        if (done.length > 0) {
          const reply = await this.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: this.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
          if (reply.Failed?.length)
            this.logger.warn("delete failed; message will be redelivered", { count: reply.Failed.length });
        }
      } catch (error) {
        if (!this.running) return;
        this.logger.warn("queue poll failed; retrying", { error });
        await new Promise((done) => setTimeout(done, 500));
      }
    }
  }

  private toRecord(message: Message): SQSRecord {
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
      eventSourceARN: `arn:aws:sqs:local:000000000000:${this.queueUrl.split("/").pop()}`,
      awsRegion: process.env.AWS_REGION ?? "us-east-1",
    };
  }
}
