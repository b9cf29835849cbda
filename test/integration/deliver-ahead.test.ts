import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { NotDueBeforeDeadlineError } from "../../shared/events/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { dispatchEvery, startConsumer } from "../support/consumer.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Messages delivered ahead of their due time (`HOURGLASS_DELIVER_AHEAD_MS`, the local default) on
 * the real stack: the dispatcher's SQS delay makes each message visible seconds early, the
 * consumer receives it then, and the worker holds it until it is due. Received early, started on
 * time, never early (invariant 1), and exactly once. The same events with the setting at 0 are
 * visible only in the second before they are due, which is what the first assertion tells apart.
 */
const started = new Map<string, { at: number; runAt: number }>();
const runs: string[] = [];
let runningNow = 0;
let mostRunning = 0;
const handler = defineHandler(
  "test.ahead",
  z.object({ holdMs: z.number().optional() }),
  async (payload, context) => {
    runs.push(context.id);
    started.set(context.id, { at: Date.now(), runAt: context.runAt.getTime() });
    runningNow++;
    mostRunning = Math.max(mostRunning, runningNow);
    await new Promise((done) => setTimeout(done, payload.holdMs ?? 0));
    runningNow--;
  },
);

const hourglasses: TestHourglass[] = [];
afterAll(async () => {
  for (const hg of hourglasses) await hg.destroy();
});

async function receivedBy(aheadMs: number, n: number) {
  const hg = await testHourglass(
    { HOURGLASS_LOOKAHEAD_SECONDS: "5", HOURGLASS_DELIVER_AHEAD_MS: String(aheadMs) },
    { handlers: [handler] },
  );
  hourglasses.push(hg);
  expect(hg.config.deliverAheadMs).toBe(aheadMs);
  const tenant = freshTenant("ahead");
  const ids = Array.from({ length: n }, (_, i) => `${tenant}-e${i}`);
  // Due 7.5 s from now: claimed a look-ahead early (5 s), with time to spare to receive.
  const runAt = Date.now() + 7_500;
  await hg.events.scheduleBatch(
    tenant,
    ids.map((id) => ({ id, type: "test.ahead", payload: {}, runAt: new Date(runAt).toISOString() })),
  );
  const stopDispatching = dispatchEvery(hg);
  const poller = startConsumer(hg, { pollers: 2, maxInFlight: 50 });
  try {
    // What the consumer holds 1.5 s before the due time.
    await new Promise((done) => setTimeout(done, runAt - 1_500 - Date.now()));
    const heldEarly = poller.counts.events;
    const startedEarly = ids.filter((id) => started.has(id)).length;
    await eventually(
      async () => (ids.every((id) => started.has(id)) ? true : undefined),
      30_000,
      "all started",
    );
    return { ids, heldEarly, startedEarly };
  } finally {
    await poller.stop();
    await stopDispatching();
  }
}

describe("messages delivered ahead of their due time", () => {
  it("are received seconds early and held by the worker until due: never early, each once", async () => {
    const n = 20;
    const ahead = await receivedBy(3_000, n);
    // Visible 3 s early (within the second below): all in the consumer 1.5 s before due.
    expect(ahead.heldEarly).toBe(n);
    expect(ahead.startedEarly).toBe(0);
    for (const id of ahead.ids) {
      const start = started.get(id)!;
      expect(start.at).toBeGreaterThanOrEqual(start.runAt);
    }
    expect(runs.filter((id) => ahead.ids.includes(id))).toHaveLength(n);

    // Without it, nothing is visible before the last second before due.
    const onTime = await receivedBy(0, n);
    expect(onTime.heldEarly).toBe(0);
    for (const id of onTime.ids) expect(started.get(id)!.at).toBeGreaterThanOrEqual(started.get(id)!.runAt);
  }, 60_000);

  it("wait without holding the consumer's slots, so a message due sooner is still received, and start within them", async () => {
    const hg = await testHourglass(
      { HOURGLASS_LOOKAHEAD_SECONDS: "5", HOURGLASS_DELIVER_AHEAD_MS: "3000" },
      { handlers: [handler] },
    );
    hourglasses.push(hg);
    const tenant = freshTenant("ahead-slots");
    // Six due in 8 s: visible 3 s early, then waiting in a consumer with two slots.
    const farAt = Date.now() + 8_000;
    const far = Array.from({ length: 6 }, (_, i) => `${tenant}-far${i}`);
    await hg.events.scheduleBatch(
      tenant,
      far.map((id) => ({
        id,
        type: "test.ahead",
        payload: { holdMs: 300 },
        runAt: new Date(farAt).toISOString(),
      })),
    );
    const stopDispatching = dispatchEvery(hg);
    mostRunning = 0;
    const poller = startConsumer(hg, { pollers: 2, maxInFlight: 2 });
    try {
      await eventually(
        async () => (hg.worker.waiting >= far.length ? true : undefined),
        15_000,
        "far ones held",
      );
      // Then one due a second before them: sent at once, and it must not queue behind them.
      const near = `${tenant}-near`;
      const nearAt = farAt - 1_000;
      await hg.events.schedule(tenant, {
        id: near,
        type: "test.ahead",
        payload: {},
        runAt: new Date(nearAt).toISOString(),
      });
      await eventually(
        async () => ([near, ...far].every((id) => started.has(id)) ? true : undefined),
        30_000,
        "all started",
      );
      expect(started.get(near)!.at).toBeGreaterThanOrEqual(nearAt);
      expect(started.get(near)!.at).toBeLessThan(farAt);
      for (const id of far) expect(started.get(id)!.at).toBeGreaterThanOrEqual(farAt);
      // Six came due together in a consumer of two slots: at most two handlers ran at once.
      expect(mostRunning).toBeLessThanOrEqual(2);
      expect(mostRunning).toBe(2);
    } finally {
      await poller.stop();
      await stopDispatching();
    }
  }, 60_000);

  it("go back to the queue at once when they cannot come due before a Lambda's deadline", async () => {
    const hg = await testHourglass({ HOURGLASS_LOOKAHEAD_SECONDS: "5" }, { handlers: [handler] });
    hourglasses.push(hg);
    const runAt = Date.now() + 3_000;
    const message = { member: `${freshTenant("deadline")}/e1`, shard: 0, gen: 1, runAt, attempt: 0 };
    const asked = Date.now();
    // Due in 3 s, the invocation must end in 1 s: thrown before any wait (the queue redelivers it),
    // not dropped or cut short after waiting most of the invocation away.
    await expect(hg.worker.process(message, Date.now() + 1_000)).rejects.toBeInstanceOf(
      NotDueBeforeDeadlineError,
    );
    expect(Date.now() - asked).toBeLessThan(1_000);
    expect(hg.worker.waiting).toBe(0);
  });
});
