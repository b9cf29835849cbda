import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import { notificationStreamKey } from "../../shared/engine/keys.ts";
import { silentLogger } from "../../shared/logger.ts";
import { createNotifier } from "../../shared/notifications/create.ts";
import type { Transition } from "../../shared/notifications/model.ts";
import type { Notifier } from "../../shared/notifications/notifier.ts";
import { notify } from "../../shared/notifications/publish.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

// What a Lambda invocation publishes goes out when it returns: PutEvents bills per entry, and a
// request carries 10, so the transitions of one batch of outcomes take ceil(n/10) requests. The bus
// is aws-sdk-client-mock (nothing emulates EventBridge here); the tenant's stream is real Redis.
const eventBridge = mockClient(EventBridgeClient);
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass();
});
afterAll(async () => {
  await hg?.destroy();
  eventBridge.restore();
});
beforeEach(() => {
  eventBridge.reset();
  eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
    FailedEntryCount: 0,
    Entries: input.Entries.map((_, i) => ({ EventId: `e${i}` })),
  }));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let tenants = 0;

/** A notifier as a function's would be built, with the stream on so the Redis side is seen too. */
function lambdaNotifier(env: Record<string, string>): Notifier {
  const config = loadConfig(
    { ...process.env, AWS_LAMBDA_FUNCTION_NAME: "hourglass-worker" },
    {
      HOURGLASS_MODE: "aws",
      HOURGLASS_KEY_PREFIX: hg.config.keyPrefix,
      HOURGLASS_SHARDS: String(hg.config.shards),
      HOURGLASS_NOTIFY_STREAM: "true",
      HOURGLASS_EVENT_BUS_NAME: "hourglass-bus",
      LOG_LEVEL: "SILENT",
      ...env,
    },
  );
  return createNotifier(config, hg.index, silentLogger, () => new EventBridgeClient({}));
}

/**
 * The transitions of a worker batch, in the order and at the pace a worker makes them: each
 * message starts, its handler runs for longer than a long-running process's flush interval, and
 * it ends. Returns the tenant they were published for.
 */
async function runBatch(notifier: Notifier, outcomes: readonly Transition[]): Promise<string> {
  const tenant = `nb${++tenants}`;
  for (const [i, outcome] of outcomes.entries()) {
    notify({ notifier, clock: Date.now }, "started", { tenant, id: `ev-${i}`, type: "t.x", attempt: 1 });
    if (i % 3 === 0) await sleep(60);
    notify({ notifier, clock: Date.now }, outcome, { tenant, id: `ev-${i}`, type: "t.x", attempt: 1 });
  }
  await notifier.flush(); // the function's handler does this before it returns
  return tenant;
}

const putCalls = () =>
  eventBridge.commandCalls(PutEventsCommand).map((call) => call.args[0].input.Entries ?? []);
const streamLength = (tenant: string) => hg.redis.xlen(notificationStreamKey(hg.config.keyPrefix, tenant));

describe("notifications from a Lambda invocation", () => {
  it("puts a batch of n transitions in ceil(n/10) PutEvents calls, however long the batch ran", async () => {
    const every = "scheduled,rescheduled,dispatched,started,succeeded,retrying,dead,cancelled,held";
    for (const messages of [1, 5, 6, 12]) {
      eventBridge.resetHistory();
      const notifier = lambdaNotifier({ HOURGLASS_EVENT_BUS_TRANSITIONS: every });
      const outcomes = Array.from(
        { length: messages },
        (_, i): Transition => (i % 4 === 3 ? "retrying" : "succeeded"),
      );
      const tenant = await runBatch(notifier, outcomes);
      const n = messages * 2;
      const calls = putCalls();
      expect(
        calls.map((entries) => entries.length),
        `${n} transitions`,
      ).toEqual(Array.from({ length: Math.ceil(n / 10) }, (_, i) => Math.min(10, n - i * 10)));
      expect(await streamLength(tenant)).toBe(n);
      expect(notifier.stats()).toEqual({ published: n, failed: 0, dropped: 0 });
      await notifier.close();
    }
  }, 30_000);

  it("puts only the transitions the deployment named on the bus; the tenant's stream keeps every one", async () => {
    const notifier = lambdaNotifier({ HOURGLASS_EVENT_BUS_TRANSITIONS: "dead,retrying" });
    const outcomes: Transition[] = ["succeeded", "dead", "retrying", "succeeded", "dead"];
    const tenant = await runBatch(notifier, outcomes);
    const entries = putCalls();
    expect(entries).toHaveLength(1);
    expect(entries[0]!.map((entry) => entry.DetailType)).toEqual([
      "Event Dead",
      "Event Retrying",
      "Event Dead",
    ]);
    expect(await streamLength(tenant)).toBe(10);
    await notifier.close();
  });

  it("puts nothing on a bus when no transition is named, and buffers nothing without a sink that takes one", async () => {
    const withStream = lambdaNotifier({});
    const tenant = await runBatch(withStream, ["succeeded", "dead"]);
    expect(putCalls()).toHaveLength(0);
    expect(await streamLength(tenant)).toBe(4);
    await withStream.close();

    // As the construct's functions run by default: the stream off (API Gateway cannot stream it).
    const onAws = lambdaNotifier({ HOURGLASS_NOTIFY_STREAM: "false" });
    expect(onAws.enabled).toBe(false);
    const silent = await runBatch(onAws, ["succeeded"]);
    expect(putCalls()).toHaveLength(0);
    expect(await streamLength(silent)).toBe(0);
  });

  it("refuses a transition that does not exist", () => {
    expect(() => lambdaNotifier({ HOURGLASS_EVENT_BUS_TRANSITIONS: "dead,finished" })).toThrow(
      /HOURGLASS_EVENT_BUS_TRANSITIONS.*unknown transitions finished/,
    );
  });
});
