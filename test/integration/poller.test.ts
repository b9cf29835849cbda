import { randomBytes } from "node:crypto";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqsClient } from "../../shared/aws.ts";
import type { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";
import { QueuePoller } from "../../shared/local/poller.ts";
import { silentLogger } from "../../shared/logger.ts";
import { eventually } from "../support/harness.ts";

/**
 * The local queue consumer against fauxqs: it deletes exactly the messages whose outcome the
 * handler recorded, in batches SQS accepts (≤ 10 entries), and never one still being handled or
 * one whose handler failed. fauxqs answers success for any receipt handle, so the test reads what
 * is left in the queue instead of trusting the delete replies.
 */

const sqs = createSqsClient();
const deleteBatchSizes: number[] = [];
sqs.middlewareStack.add(
  (next, context) => async (args) => {
    const input = args.input as { Entries?: unknown[] };
    if (context.commandName === "DeleteMessageBatchCommand")
      deleteBatchSizes.push(input.Entries?.length ?? 0);
    return next(args);
  },
  { step: "initialize", name: "count-deletes" },
);
let queueUrl: string;

beforeAll(async () => {
  // A short visibility timeout, so that what was not deleted comes back to be read.
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: `poller-${randomBytes(4).toString("hex")}`,
      Attributes: { VisibilityTimeout: "2" },
    }),
  );
  queueUrl = created.QueueUrl!;
});

afterAll(async () => {
  await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  sqs.destroy();
});

async function send(bodies: string[]) {
  for (let i = 0; i < bodies.length; i += 10) {
    const Entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody }));
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }));
  }
}

async function inFlight(): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  return (
    Number(Attributes!.ApproximateNumberOfMessages) +
    Number(Attributes!.ApproximateNumberOfMessagesNotVisible)
  );
}

describe("the local queue consumer's acks", () => {
  it("deletes exactly the handled messages, ten at most a request, never one still running or failed", async () => {
    const ok = Array.from({ length: 23 }, (_, i) => `ok-${i}`);
    const failing = ["fail-0", "fail-1", "fail-2"];
    const slow = ["slow-0", "slow-1"];
    let release!: () => void;
    const gate = new Promise<void>((done) => {
      release = done;
    });
    const handle = async (event: SQSEvent): Promise<SQSBatchResponse> => {
      const failures = [];
      for (const record of event.Records) {
        if (record.body.startsWith("slow-")) await gate;
        if (record.body.startsWith("fail-")) failures.push({ itemIdentifier: record.messageId });
      }
      return { batchItemFailures: failures };
    };
    await send([...ok, ...failing, ...slow]);
    const poller = new QueuePoller(sqs, queueUrl, handle, silentLogger, 2, 100);
    poller.start();
    try {
      await eventually(
        async () => (poller.deleted === ok.length ? true : undefined),
        20_000,
        "the ok deletes",
      );
      // The slow ones are still being handled, so they are still in the queue, with the failed ones.
      expect(poller.counts.received).toBeGreaterThanOrEqual(ok.length + failing.length + slow.length);
      expect(await inFlight()).toBe(failing.length + slow.length);
      release();
      await eventually(
        async () => (poller.deleted === ok.length + slow.length ? true : undefined),
        20_000,
        "the slow deletes",
      );
    } finally {
      release();
      await poller.stop();
    }
    expect(deleteBatchSizes.every((n) => n >= 1 && n <= 10)).toBe(true);
    expect(deleteBatchSizes.reduce((a, b) => a + b, 0)).toBe(ok.length + slow.length);
    // What is left is exactly the failed messages, back after their visibility timeout.
    const left = new Set<string>();
    await eventually(async () => {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const m of Messages) left.add(m.Body!);
      return left.size >= failing.length ? true : undefined;
    }, 20_000);
    expect([...left].sort()).toEqual(failing);
    expect(await inFlight()).toBe(failing.length);
  });
});

describe("the local queue consumer's room, counted in events", () => {
  it("asks for no more shared messages than maxInFlight holds, across all its pollers", async () => {
    // A queue of its own: the test above leaves its failed messages in the shared one.
    const own = await sqs.send(
      new CreateQueueCommand({ QueueName: `poller-room-${randomBytes(4).toString("hex")}` }),
    );
    const url = own.QueueUrl!;
    const bundle = (n: number) =>
      `[4,${Array.from({ length: 4 }, (_, i) => `["t/e${n}-${i}",0,1,0,0]`).join(",")}]`;
    const bodies = Array.from({ length: 12 }, (_, n) => bundle(n));
    for (let i = 0; i < bodies.length; i += 10) {
      const Entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody }));
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries }));
    }
    let running = 0;
    let peak = 0;
    const handle = async (event: SQSEvent): Promise<SQSBatchResponse> => {
      running += 4 * event.Records.length;
      peak = Math.max(peak, running);
      await new Promise((done) => setTimeout(done, 150));
      running -= 4 * event.Records.length;
      return { batchItemFailures: [] };
    };
    // Four pollers and room for eight events: two messages of four at a time, whoever asks.
    // What the poller tells the outcome gate: a receive it kept small for lack of room says
    // nothing of a backlog (one of two taken is not a queue holding more than the consumer takes).
    const backlog: boolean[] = [];
    const gate = { backlog: (full: boolean) => backlog.push(full), open() {}, close() {}, held: 0 };
    const outcomes = gate as unknown as TrailingOutcomes;
    const poller = new QueuePoller(sqs, url, handle, silentLogger, 4, 8, 1, outcomes, undefined, 4);
    poller.start();
    try {
      await eventually(
        async () => (poller.deleted === bodies.length ? true : undefined),
        20_000,
        "every shared message handled and deleted",
      );
    } finally {
      await poller.stop();
      await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    }
    expect(poller.counts.events).toBe(48);
    // Ten messages a receive, as before, would have run up to 40 events at once.
    expect(peak).toBeLessThanOrEqual(8);
    expect(peak).toBeGreaterThanOrEqual(4);
    expect(backlog).not.toContain(true);
    expect(backlog).toContain(false);
  });
});
