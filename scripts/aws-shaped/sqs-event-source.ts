import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from "aws-lambda";
import type { LambdaFunction } from "./lambda-function.ts";
import type { EventSourceSpec } from "./template.ts";

export interface SqsEventSourceOptions {
  readonly spec: EventSourceSpec;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  /** A client with the function's role credentials: Lambda's pollers call SQS as the function. */
  readonly sqs: SQSClient;
  readonly fn: LambdaFunction;
  readonly log: (line: string) => void;
}

/** Lambda starts an SQS event source with five pollers and adds up to 300 a minute while messages wait. */
const INITIAL_POLLERS = 5;
const POLLERS_ADDED_PER_SECOND = 5;
const WAIT_SECONDS = 20;

export interface EventSourceStats {
  readonly pollers: number;
  readonly batches: number;
  readonly messages: number;
  readonly deleted: number;
  readonly failedItems: number;
  readonly failedBatches: number;
}

/**
 * Lambda's SQS event source mapping, as the template configures it: long-polling pollers, each
 * handing a batch of up to `BatchSize` messages to one synchronous invocation, so never more
 * invocations at once than `MaximumConcurrency`. With `ReportBatchItemFailures`, the items the
 * function names stay on the queue and the rest are deleted; a function error, a timeout or a
 * malformed response leaves the whole batch to come back after the visibility timeout.
 */
export class SqsEventSource {
  private pollers = 0;
  private busy = 0;
  private stopping = false;
  private readonly aborts = new Set<AbortController>();
  private readonly running = new Set<Promise<void>>();
  private scaler: NodeJS.Timeout | undefined;
  private lastReceiveHadMessages = false;
  private counts = { batches: 0, messages: 0, deleted: 0, failedItems: 0, failedBatches: 0 };

  constructor(private readonly options: SqsEventSourceOptions) {}

  /**
   * Lambda reads the queue's attributes with the function's role when the mapping is created (a
   * role without sqs:GetQueueAttributes fails the deploy), then starts polling.
   */
  async start(): Promise<void> {
    if (!this.options.spec.enabled) return;
    await this.options.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.options.queueUrl,
        AttributeNames: ["VisibilityTimeout"],
      }),
    );
    for (let i = 0; i < Math.min(INITIAL_POLLERS, this.maxPollers); i++) this.addPoller();
    this.scaler = setInterval(() => this.scale(), 1_000);
  }

  stats(): EventSourceStats {
    return { pollers: this.pollers, ...this.counts };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.scaler);
    for (const abort of this.aborts) abort.abort();
    await Promise.allSettled([...this.running]);
  }

  /** More pollers while every poller holds a batch and messages keep coming, up to the maximum. */
  /**
   * Never more batches received than can be invoked: Lambda's pollers stop at the function's
   * concurrency, and a batch received without an environment to run it would only age.
   */
  private get maxPollers(): number {
    return Math.min(this.options.spec.maximumConcurrency, this.options.fn.concurrencyLimit);
  }

  private scale(): void {
    const max = this.maxPollers;
    if (!this.lastReceiveHadMessages || this.busy < this.pollers) return;
    for (let i = 0; i < POLLERS_ADDED_PER_SECOND && this.pollers < max; i++) this.addPoller();
  }

  private addPoller(): void {
    this.pollers++;
    const run = this.poll().finally(() => {
      this.pollers--;
      this.running.delete(run);
    });
    this.running.add(run);
  }

  private async poll(): Promise<void> {
    const { spec, log } = this.options;
    while (!this.stopping) {
      const abort = new AbortController();
      this.aborts.add(abort);
      let messages: Message[];
      try {
        messages = await this.receive(abort.signal);
      } catch (error) {
        if (this.stopping) return;
        log(`event source ${spec.logicalId}: receive failed: ${(error as Error).message}`);
        await new Promise((done) => setTimeout(done, 1_000));
        continue;
      } finally {
        this.aborts.delete(abort);
      }
      this.lastReceiveHadMessages = messages.length > 0;
      if (messages.length === 0) {
        // An idle poller beyond the first five goes away, as Lambda scales its pollers down.
        if (this.pollers > INITIAL_POLLERS) return;
        continue;
      }
      this.busy++;
      try {
        await this.handle(messages);
      } finally {
        this.busy--;
      }
    }
  }

  /** One batch: a receive, then more within the batching window until the batch is full. */
  private async receive(signal: AbortSignal): Promise<Message[]> {
    const { spec, sqs, queueUrl } = this.options;
    const batch: Message[] = [];
    const windowEnds = Date.now() + spec.batchingWindowSeconds * 1000;
    do {
      const waitSeconds =
        batch.length === 0 ? WAIT_SECONDS : Math.max(0, Math.ceil((windowEnds - Date.now()) / 1000));
      const received = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: Math.min(10, spec.batchSize - batch.length),
          WaitTimeSeconds: Math.min(WAIT_SECONDS, waitSeconds),
          MessageSystemAttributeNames: ["All"],
          MessageAttributeNames: ["All"],
        }),
        { abortSignal: signal },
      );
      batch.push(...(received.Messages ?? []));
      if ((received.Messages ?? []).length === 0 && batch.length > 0) break;
    } while (batch.length > 0 && batch.length < spec.batchSize && Date.now() < windowEnds);
    return batch;
  }

  private async handle(messages: Message[]): Promise<void> {
    const { spec, fn, log } = this.options;
    this.counts.batches++;
    this.counts.messages += messages.length;
    const event: SQSEvent = { Records: messages.map((message) => this.record(message)) };
    let failed: Set<string>;
    try {
      const response = await fn.invoke(event);
      failed = spec.reportBatchItemFailures ? this.failedItems(response, messages) : new Set();
    } catch (error) {
      // The whole batch stays: each message comes back when its visibility timeout ends.
      this.counts.failedBatches++;
      log(`event source ${spec.logicalId}: batch of ${messages.length} failed: ${(error as Error).message}`);
      return;
    }
    this.counts.failedItems += failed.size;
    const done = messages.filter((message) => !failed.has(message.MessageId!));
    await this.delete(done);
  }

  /**
   * The ids the function reports as failed. Lambda treats a response it cannot read (an item id
   * that is empty, missing or not in the batch) as a failure of the whole batch.
   */
  private failedItems(response: unknown, messages: Message[]): Set<string> {
    const all = new Set(messages.map((message) => message.MessageId!));
    if (response === null || response === undefined || typeof response !== "object") return new Set();
    const failures = (response as Partial<SQSBatchResponse>).batchItemFailures;
    if (failures === undefined || failures === null) return new Set();
    if (!Array.isArray(failures)) return all;
    const ids = new Set<string>();
    for (const failure of failures) {
      const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
      if (typeof id !== "string" || id === "" || !all.has(id)) return all;
      ids.add(id);
    }
    return ids;
  }

  private async delete(messages: Message[]): Promise<void> {
    const { sqs, queueUrl, spec, log } = this.options;
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      try {
        const result = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((message, n) => ({ Id: String(n), ReceiptHandle: message.ReceiptHandle! })),
          }),
        );
        this.counts.deleted += result.Successful?.length ?? 0;
        for (const failure of result.Failed ?? [])
          log(`event source ${spec.logicalId}: delete failed: ${failure.Code} ${failure.Message ?? ""}`);
      } catch (error) {
        log(`event source ${spec.logicalId}: delete failed: ${(error as Error).message}`);
      }
    }
  }

  private record(message: Message): SQSRecord {
    const attributes = message.Attributes ?? {};
    return {
      messageId: message.MessageId!,
      receiptHandle: message.ReceiptHandle!,
      body: message.Body ?? "",
      attributes: {
        ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? "1",
        SentTimestamp: attributes.SentTimestamp ?? "0",
        SenderId: attributes.SenderId ?? "",
        ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? "0",
        ...(attributes.MessageDeduplicationId && {
          MessageDeduplicationId: attributes.MessageDeduplicationId,
        }),
        ...(attributes.MessageGroupId && { MessageGroupId: attributes.MessageGroupId }),
        ...(attributes.SequenceNumber && { SequenceNumber: attributes.SequenceNumber }),
      },
      messageAttributes: messageAttributes(message.MessageAttributes),
      md5OfBody: message.MD5OfBody ?? "",
      eventSource: "aws:sqs",
      eventSourceARN: this.options.queueArn,
      awsRegion: this.options.region,
    };
  }
}

/** Lambda's record spells message attributes in camel case, with list fields always present. */
function messageAttributes(
  attributes: Record<string, MessageAttributeValue> | undefined,
): SQSMessageAttributes {
  return Object.fromEntries(
    Object.entries(attributes ?? {}).map(([name, value]) => [
      name,
      {
        dataType: value.DataType ?? "String",
        ...(value.StringValue !== undefined && { stringValue: value.StringValue }),
        ...(value.BinaryValue !== undefined && {
          binaryValue: Buffer.from(value.BinaryValue).toString("base64"),
        }),
        stringListValues: [],
        binaryListValues: [],
      },
    ]),
  );
}
