import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DispatchMessage } from "../../shared/events/model.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import type { Transport } from "../../shared/transport/transport.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 1, never early: whatever the due times, no handler starts before its runAt. SQS delays
 * are whole seconds, so most events arrive up to a second early and the worker must wait the rest.
 */
describe("never early", () => {
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
            for (const id of ids) {
              for (const run of rec.runsOf(id)) expect(run.startedAt).toBeGreaterThanOrEqual(run.runAt);
            }
          },
        ),
        { numRuns: 3 },
      );
    } finally {
      await runtime.stop();
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
