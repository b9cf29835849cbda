import { ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqsBatchHandler } from "../../shared/events/sqs-batch.ts";
import type { WorkResult } from "../../shared/events/worker.ts";
import { toSqsRecord } from "../../shared/local/poller.ts";
import { silentLogger } from "../../shared/logger.ts";
import { type DispatchMessage, eventsInBody } from "../../shared/model/message.ts";
import { SqsTransport } from "../../shared/transport/sqs.ts";
import { dispatchEvery, startConsumer } from "../support/consumer.ts";
import { Crash, captured, engine, freshTenant, intercept } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Events due in the same second share a queue message (config `eventsPerMessage`, 4 locally).
 * The message goes back to the queue when one of its events could not be recorded, so its
 * redelivery carries events that already ran: those must be dropped, not run again (invariant 3),
 * and the one that failed must still run (invariant 2). Real Redis, DynamoDB Local and fauxqs.
 */

const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler] });
});

afterAll(async () => {
  await hg.destroy();
});

/** Receives the one message this file's queue should hold (no worker polls it). */
async function receiveOne() {
  return eventually(
    async () => {
      const { Messages } = await hg.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: hg.queueUrl!,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      if (!Messages?.length) return undefined;
      expect(Messages).toHaveLength(1);
      return Messages[0]!;
    },
    15_000,
    "the shared message",
  );
}

describe("a message shared by events due in the same second", () => {
  it("redelivered after one event failed, runs only that event again: each runs exactly once", async () => {
    const tenant = freshTenant("bundled");
    // Created without a send (as if the process died holding the messages), then sent together.
    const held = captured();
    const { service } = engine(hg, { transport: held.transport });
    const runAt = new Date(Date.now() + 200).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { event } = await service.schedule(tenant, { type: "test.record", payload: { i }, runAt });
      ids.push(event.id);
    }
    expect(held.messages).toHaveLength(3);
    const report = await new SqsTransport(hg.sqs, hg.queueUrl!, undefined, 0, 10).send(
      held.messages,
      Date.now(),
    );
    expect(report).toEqual({ sent: 3, failed: [] });
    const message = await receiveOne();
    expect(eventsInBody(message.Body!)).toBe(3);

    // The second event's first try fails before it starts (its store did not answer).
    const failingId = ids[1]!;
    let failedOnce = false;
    const { worker } = engine(hg);
    const flaky = intercept(worker, "process", async (process, ...args) => {
      const dispatch = args[0] as DispatchMessage;
      if (dispatch.member === `${tenant}/${failingId}` && !failedOnce) {
        failedOnce = true;
        throw new Crash();
      }
      return process(...args);
    });
    const results: WorkResult[] = [];
    const handle = createSqsBatchHandler(flaky, silentLogger, (r) => results.push(r));
    const record = toSqsRecord(message, hg.queueUrl!);

    const first = await handle({ Records: [record] });
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(results.map((r) => r.outcome)).toEqual(["succeeded", "succeeded"]);

    // SQS hands the same message back after its visibility timeout.
    const second = await handle({ Records: [record] });
    expect(second.batchItemFailures).toEqual([]);
    expect(
      results
        .slice(2)
        .map((r) => r.outcome)
        .sort(),
    ).toEqual(["dropped", "dropped", "succeeded"]);

    for (const id of ids) {
      expect(rec.runsOf(id)).toHaveLength(1);
      expect((await hg.events.get(tenant, id)).status).toBe("succeeded");
    }
  });
});

describe("the local consumer's slots, with shared messages", () => {
  it("frees each event's slot as its own work ends: events of shared messages waiting on slots never wait on each other", async () => {
    // Two slots, and messages of ten events due a few ms apart: the first events to come due take
    // both slots; had a finished event kept its slot until the rest of its message was done, its
    // message-mates (asking for a slot) and it would wait on each other for good.
    const local = await testHourglass(
      { HOURGLASS_LOOKAHEAD_SECONDS: "5", HOURGLASS_DELIVER_AHEAD_MS: "3000" },
      { handlers: [rec.handler] },
    );
    const tenant = freshTenant("slots");
    const base = Math.ceil((Date.now() + 6_000) / 1000) * 1000; // a whole second, so all share it
    const ids = Array.from({ length: 30 }, (_, i) => `${tenant}-e${i}`);
    await local.events.scheduleBatch(
      tenant,
      ids.map((id, i) => ({
        id,
        type: "test.record",
        payload: { i },
        runAt: new Date(base + (i % 10) * 60).toISOString(),
      })),
    );
    const stopDispatching = dispatchEvery(local);
    const poller = startConsumer(local, { pollers: 1, maxInFlight: 2 });
    try {
      await eventually(
        async () => (ids.every((id) => rec.runsOf(id).length === 1) ? true : undefined),
        20_000,
        "every event to run",
      );
      // Shared messages, not one an event: 30 events in at most a handful of receives' worth.
      expect(poller.counts.events).toBeGreaterThanOrEqual(30);
      expect(poller.counts.received).toBeLessThan(30);
    } finally {
      await poller.stop();
      await stopDispatching();
      await local.destroy();
    }
    for (const id of ids) expect(rec.runsOf(id)).toHaveLength(1);
  }, 40_000);
});
