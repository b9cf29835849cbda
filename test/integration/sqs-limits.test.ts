import {
  ReceiveMessageCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqsClient } from "../../shared/aws.ts";
import { type DispatchMessage, decodeMessages, eventsInBody } from "../../shared/model/message.ts";
import { SqsTransport } from "../../shared/transport/sqs.ts";
import { startConsumer } from "../support/consumer.ts";
import { engine, freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * SQS's real limits, which the emulator does not enforce (it takes bodies up to 1 MiB): 256 KiB
 * per message and per SendMessageBatch (UTF-8 bytes of the bodies), 10 entries. A client with
 * this middleware refuses what SQS refuses, so the transport is tested against the real rules.
 */
const SQS_MAX_BYTES = 262_144;

class SqsLimitError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

function strictSqs(options: { failBatches?: boolean } = {}): SQSClient {
  const client = createSqsClient();
  const bytes = (body: string | undefined) => Buffer.byteLength(body ?? "", "utf8");
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Entries?: SendMessageBatchRequestEntry[]; MessageBody?: string };
      if (context.commandName === "SendMessageBatchCommand") {
        const entries = input.Entries ?? [];
        if (options.failBatches) throw new SqsLimitError("InternalError", "the batch failed");
        if (entries.length > 10) throw new SqsLimitError("TooManyEntriesInBatchRequest", "over 10 entries");
        if (entries.some((e) => bytes(e.MessageBody) > SQS_MAX_BYTES))
          throw new SqsLimitError("InvalidParameterValue", "Message must be shorter than 262144 bytes.");
        if (entries.reduce((sum, e) => sum + bytes(e.MessageBody), 0) > SQS_MAX_BYTES)
          throw new SqsLimitError(
            "BatchRequestTooLong",
            "Batch requests cannot be longer than 262144 bytes.",
          );
      }
      if (context.commandName === "SendMessageCommand" && bytes(input.MessageBody) > SQS_MAX_BYTES)
        throw new SqsLimitError("InvalidParameterValue", "Message must be shorter than 262144 bytes.");
      return next(args);
    },
    { step: "initialize", name: "sqs-real-limits" },
  );
  return client;
}

const rec = recorder();
let hg: TestHourglass;
const clients: SQSClient[] = [];

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler] });
});

afterAll(async () => {
  for (const client of clients) client.destroy();
  await hg.destroy();
});

function transport(options: { failBatches?: boolean; eventsPerMessage?: number } = {}) {
  const client = strictSqs(options);
  clients.push(client);
  return new SqsTransport(client, hg.queueUrl!, undefined, 0, options.eventsPerMessage);
}

/** Receives until `count` events came back (no worker polls this file's queue), and the bodies they came in. */
async function receiveBodies(
  count: number,
): Promise<{ events: DispatchMessage[]; bodies: DispatchMessage[][] }> {
  const bodies: DispatchMessage[][] = [];
  await eventually(
    async () => {
      const { Messages } = await hg.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: hg.queueUrl!, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const m of Messages ?? []) bodies.push(decodeMessages(m.Body!));
      return bodies.flat().length >= count ? true : undefined;
    },
    15_000,
    `${count} events`,
  );
  return { events: bodies.flat(), bodies };
}

async function receive(count: number): Promise<DispatchMessage[]> {
  return (await receiveBodies(count)).events;
}

const message = (tenant: string, i: number, payload?: string): DispatchMessage => ({
  member: `${tenant}/m${i}`,
  shard: 0,
  gen: 1,
  runAt: Date.now(),
  attempt: 0,
  ...(payload !== undefined && { payload }),
});

describe("sending to SQS within its real limits", () => {
  it("ten 26 KiB payloads are packed into batches SQS accepts, none lost", async () => {
    const tenant = freshTenant("pack");
    const payload = JSON.stringify({ label: "x".repeat(26 * 1024) });
    const messages = Array.from({ length: 10 }, (_, i) => message(tenant, i, payload));
    const report = await transport().send(messages, Date.now());
    expect(report.failed).toEqual([]);
    expect(report.sent).toBe(10);
    const received = await receive(10);
    expect(received.map((m) => m.member).sort()).toEqual(messages.map((m) => m.member).sort());
    expect(received.every((m) => m.payload === payload)).toBe(true);
  });

  it("a non-ASCII payload under 200,000 characters but over 256 KiB in UTF-8 still runs", async () => {
    const tenant = freshTenant("utf8");
    const { service } = engine(hg, { transport: transport() });
    const label = "é".repeat(140_000);
    const { event } = await service.schedule(tenant, {
      type: "test.record",
      payload: { label },
      delaySeconds: 0,
    });
    const poller = startConsumer(hg, { pollers: 1, maxInFlight: 10 });
    try {
      // No dispatcher runs here: only the send at create can deliver it before the 30 s lease.
      await eventually(
        async () => ((await hg.events.get(tenant, event.id)).status === "succeeded" ? true : undefined),
        10_000,
        "the event to run",
      );
    } finally {
      await poller.stop();
    }
    expect(rec.runsOf(event.id)).toHaveLength(1);
  });

  it("a message whose inline payload would exceed 256 KiB goes without it", async () => {
    const tenant = freshTenant("big");
    const huge = JSON.stringify({ label: "ü".repeat(150_000) });
    const report = await transport().send([message(tenant, 0, huge)], Date.now());
    expect(report).toEqual({ sent: 1, failed: [] });
    const [received] = await receive(1);
    expect(received!.member).toBe(`${tenant}/m0`);
    expect(received!.payload).toBeUndefined();
  });

  it("when a batch send fails, each entry is sent again on its own without its inline payload", async () => {
    const tenant = freshTenant("fallback");
    const messages = Array.from({ length: 3 }, (_, i) => message(tenant, i, JSON.stringify({ i })));
    const report = await transport({ failBatches: true }).send(messages, Date.now());
    expect(report).toEqual({ sent: 3, failed: [] });
    const received = await receive(3);
    expect(received.map((m) => m.member).sort()).toEqual(messages.map((m) => m.member).sort());
    // The worker reads the payload from the journal: one small message cannot fail for its size.
    expect(received.every((m) => m.payload === undefined)).toBe(true);
  });
});

describe("events due in the same second share a message (eventsPerMessage)", () => {
  it("25 events due at once go as messages of at most 10, each event once", async () => {
    const tenant = freshTenant("bundle");
    const messages = Array.from({ length: 25 }, (_, i) => message(tenant, i, JSON.stringify({ i })));
    const report = await transport({ eventsPerMessage: 10 }).send(messages, Date.now());
    expect(report).toEqual({ sent: 25, failed: [] });
    const { events, bodies } = await receiveBodies(25);
    expect(bodies.map((b) => b.length).sort((a, b) => a - b)).toEqual([5, 10, 10]);
    expect(events.map((m) => m.member).sort()).toEqual(messages.map((m) => m.member).sort());
    expect(events.every((m) => m.payload === JSON.stringify({ i: Number(m.member.split("/m")[1]) }))).toBe(
      true,
    );
  });

  it("the most a message may hold (100, the setting's bound) goes as one message the consumer counts right", async () => {
    const tenant = freshTenant("bundle-max");
    const messages = Array.from({ length: 100 }, (_, i) => message(tenant, i, JSON.stringify({ i })));
    expect(await transport({ eventsPerMessage: 100 }).send(messages, Date.now())).toEqual({
      sent: 100,
      failed: [],
    });
    const bodies: string[] = [];
    await eventually(
      async () => {
        const { Messages } = await hg.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: hg.queueUrl!, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        for (const m of Messages ?? []) bodies.push(m.Body!);
        return bodies.length > 0 ? true : undefined;
      },
      15_000,
      "the shared message",
    );
    expect(bodies).toHaveLength(1);
    expect(eventsInBody(bodies[0]!)).toBe(100);
    expect(decodeMessages(bodies[0]!).map((m) => m.member)).toEqual(messages.map((m) => m.member));
  });

  it("events visible in different seconds never share a message", async () => {
    const tenant = freshTenant("seconds");
    // Just past a second's start: `now` and `now + 100` share their second, as do `+ 2,500` and
    // `+ 2,600`. From an arbitrary instant they would not, one run in ten (a flaky failure in CI).
    const now = Math.ceil(Date.now() / 1000) * 1000 + 20;
    await new Promise((done) => setTimeout(done, now - Date.now()));
    const at = (i: number, runAt: number) => ({ ...message(tenant, i), runAt });
    const messages = [at(0, now), at(1, now + 2_500), at(2, now + 100), at(3, now + 2_600)];
    expect(await transport({ eventsPerMessage: 10 }).send(messages, now)).toEqual({ sent: 4, failed: [] });
    const { bodies } = await receiveBodies(4);
    const members = bodies.map((b) => b.map((m) => m.member.split("/")[1]).sort()).sort();
    expect(members).toEqual([
      ["m0", "m2"],
      ["m1", "m3"],
    ]);
  });

  it("a message holds no more than SQS's 256 KiB: ten 26 KiB payloads take two", async () => {
    const tenant = freshTenant("bundle-bytes");
    const payload = JSON.stringify({ label: "x".repeat(26 * 1024) });
    const messages = Array.from({ length: 10 }, (_, i) => message(tenant, i, payload));
    // The strict client refuses any message or batch over the limit: a refusal would show as
    // events sent alone without their payloads.
    expect(await transport({ eventsPerMessage: 10 }).send(messages, Date.now())).toEqual({
      sent: 10,
      failed: [],
    });
    const { events, bodies } = await receiveBodies(10);
    expect(bodies.length).toBe(2);
    expect(events.every((m) => m.payload === payload)).toBe(true);
  });

  it("counts a shared message in UTF-8 bytes: three payloads of multi-byte characters and emoji take two", async () => {
    const tenant = freshTenant("bundle-utf8");
    // 30,000 UTF-16 units each, so counted in units all three fit one 256 KiB message. In bytes
    // they do not: "€" is three, "ü€" five, and an emoji goes as a twelve-byte JSON escape (fauxqs
    // refuses characters beyond U+FFFF, and a refusal would send all three without payloads).
    const payloads = [
      JSON.stringify({ label: "€".repeat(30_000) }),
      JSON.stringify({ label: "😀".repeat(15_000) }),
      JSON.stringify({ label: "ü€".repeat(15_000) }),
    ];
    const messages = payloads.map((payload, i) => message(tenant, i, payload));
    // A refusal by the strict client would show as events sent alone without their payloads.
    expect(await transport({ eventsPerMessage: 10 }).send(messages, Date.now())).toEqual({
      sent: 3,
      failed: [],
    });
    const { events, bodies } = await receiveBodies(3);
    expect(bodies.length).toBe(2);
    const byMember = new Map(events.map((m) => [m.member, m.payload]));
    expect(messages.map((m) => byMember.get(m.member))).toEqual(payloads);
  });

  it("when a batch of shared messages fails, each event is sent again on its own", async () => {
    const tenant = freshTenant("bundle-fallback");
    const messages = Array.from({ length: 12 }, (_, i) => message(tenant, i, JSON.stringify({ i })));
    const report = await transport({ failBatches: true, eventsPerMessage: 10 }).send(messages, Date.now());
    expect(report).toEqual({ sent: 12, failed: [] });
    const { events, bodies } = await receiveBodies(12);
    expect(bodies.every((b) => b.length === 1)).toBe(true);
    expect(events.map((m) => m.member).sort()).toEqual(messages.map((m) => m.member).sort());
  });
});
