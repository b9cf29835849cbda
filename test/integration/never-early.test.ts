import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import type { DispatchMessage } from "../../shared/model/message.ts";
import type { Transport } from "../../shared/transport/transport.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 1, never early: whatever the due times, no handler starts before its runAt. SQS delays
 * are whole seconds, so most events arrive up to a second early and the worker must wait the rest.
 */
// Concurrent: the three properties share nothing (the last two build their own Hourglass) and
// spend their time waiting for due times, so side by side they prove the same in less time.
describe.concurrent("never early", () => {
  const rec = recorder();
  let hg: TestHourglass;

  beforeAll(async () => {
    hg = await testHourglass({}, { handlers: [rec.handler] });
  });
  afterAll(async () => {
    await hg.destroy();
  });

  it("holds for arbitrary due times through the real queue", async () => {
    const runtime = startRuntime(hg, { tickMs: 100 });
    let round = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: -500, max: 6_000 }), { minLength: 1, maxLength: 15 }),
          async (offsets) => {
            const tenant = `early${round++}`;
            const now = Date.now();
            const results = await hg.events.scheduleBatch(
              tenant,
              offsets.map((offset) => ({
                type: "test.record",
                payload: {},
                runAt: new Date(now + offset).toISOString(),
              })),
            );
            const ids = results.map((r) => (r.ok ? r.event.id : ""));
            await eventually(
              async () => (ids.every((id) => rec.runsOf(id).length > 0) ? true : undefined),
              20_000,
              "every event to run",
            );
            // Against the time the event was scheduled for, not the runAt its message carried.
            ids.forEach((id, i) => {
              for (const run of rec.runsOf(id))
                expect(run.startedAt).toBeGreaterThanOrEqual(now + offsets[i]!);
            });
          },
        ),
        { numRuns: 3 },
      );
    } finally {
      await runtime.stop();
    }
    // Three runs of up to 20 s of waiting each: more than the default 60 s on a loaded machine.
  }, 120_000);

  it("holds against the scheduled time when every message claims to be due now: stale, rescheduled and repeated messages", async () => {
    // Only start.lua's time check stands between these messages and an early start: each one is
    // delivered at once, its runAt rewritten to "now" (as a skewed or stale sender would write it),
    // and every message is delivered a second time after the reschedules made some of them stale.
    const skewed = recorder("test.skewed");
    const pending: Promise<unknown>[] = [];
    const sent: DispatchMessage[] = [];
    let worker: TestHourglass["worker"] | undefined;
    const deliver = (message: DispatchMessage) =>
      pending.push(worker!.process({ ...message, runAt: Date.now() }));
    const transport: Transport = {
      async send(messages: readonly DispatchMessage[]) {
        for (const message of messages) {
          sent.push(message);
          deliver(message);
        }
        return { sent: messages.length, failed: [] };
      },
    };
    const skewedHg = await testHourglass(
      { HOURGLASS_JOURNAL: "false" },
      { handlers: [skewed.handler], transport: () => transport },
    );
    worker = skewedHg.worker;
    let round = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.tuple(fc.integer({ min: 0, max: 1_500 }), fc.option(fc.integer({ min: 1, max: 1_500 }))),
            {
              minLength: 1,
              maxLength: 10,
            },
          ),
          async (plans) => {
            const tenant = `skewed${round++}`;
            const now = Date.now();
            const scheduledFor = new Map<string, number>();
            await skewedHg.events.scheduleBatch(
              tenant,
              plans.map(([offset], i) => {
                scheduledFor.set(`${tenant}-${i}`, now + offset);
                return {
                  id: `${tenant}-${i}`,
                  type: "test.skewed",
                  payload: {},
                  runAt: new Date(now + offset).toISOString(),
                };
              }),
            );
            for (const [i, [offset, later]] of plans.entries()) {
              if (later === null) continue;
              const runAt = now + offset + later;
              // An event that already ran (due at once) cannot move: it keeps its first time.
              const moved = await skewedHg.events
                .reschedule(tenant, `${tenant}-${i}`, { runAt: new Date(runAt).toISOString() })
                .then(
                  () => true,
                  () => false,
                );
              if (moved) scheduledFor.set(`${tenant}-${i}`, runAt);
            }
            for (const message of sent.splice(0)) deliver(message);
            await Promise.all(pending.splice(0));
            for (const [id, runAt] of scheduledFor) {
              const runs = skewed.runsOf(id);
              expect(runs, id).toHaveLength(1);
              expect(runs[0]!.startedAt, id).toBeGreaterThanOrEqual(runAt);
            }
          },
        ),
        { numRuns: 5 },
      );
    } finally {
      await skewedHg.destroy();
    }
  });

  it("holds even when the transport delivers every message at once, long before it is due", async () => {
    const early = recorder("test.early");
    const pending: Promise<unknown>[] = [];
    let worker: TestHourglass["worker"] | undefined;
    const eager: Transport = {
      async send(messages: readonly DispatchMessage[]) {
        for (const message of messages) pending.push(worker!.process(message));
        return { sent: messages.length, failed: [] };
      },
    };
    const eagerHg = await testHourglass(
      { HOURGLASS_JOURNAL: "false" },
      { handlers: [early.handler], transport: () => eager },
    );
    worker = eagerHg.worker;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: 0, max: 1_500 }), { minLength: 1, maxLength: 20 }),
          async (offsets) => {
            const now = Date.now();
            const results = await eagerHg.events.scheduleBatch(
              "eager",
              offsets.map((offset) => ({
                type: "test.early",
                payload: {},
                runAt: new Date(now + offset).toISOString(),
              })),
            );
            await Promise.all(pending.splice(0));
            for (const result of results) {
              const id = result.ok ? result.event.id : "";
              const runs = early.runsOf(id);
              expect(runs).toHaveLength(1);
              expect(runs[0]!.startedAt).toBeGreaterThanOrEqual(runs[0]!.runAt);
            }
          },
        ),
        { numRuns: 5 },
      );
    } finally {
      await eagerHg.destroy();
    }
  });
});
