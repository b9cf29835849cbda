import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { setDispatchPaused } from "../../shared/events/pause.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Invariant 7 under volume (issue 11): a tenant with a few events due now beside one with thousands
 * due at the same moment (created while dispatch is paused, then resumed), on the full local stack
 * (DynamoDB journal, the SQS emulator). Fairness is
 * asserted by the order of starts, not by timings: the small tenant's events must all start before
 * the large one's backlog is a third through, which due-order claims across tenants cannot give
 * (the small tenant would wait behind the whole backlog). One shard and claims of 100 make the
 * backlog span many claims, as 100,000 events do with the default sizes. It prints the figures;
 * `npm run bench -- --only fairness` has the engine-only row at 100,000.
 */
const BIG = Number(process.env.FAIRNESS_BIG ?? 1_500);
const SMALL = 100;
/** Tenants in the order their handlers started, and each start's lateness. */
const order: string[] = [];
const lateness = new Map<string, number[]>();
const handler = defineHandler("test.fair", z.object({}), async (_, context) => {
  order.push(context.tenant);
  const list = lateness.get(context.tenant) ?? [];
  list.push(Date.now() - context.runAt.getTime());
  lateness.set(context.tenant, list);
});

let hg: TestHourglass;
beforeAll(async () => {
  hg = await testHourglass({ HOURGLASS_SHARDS: "1", HOURGLASS_CLAIM_BATCH: "100" }, { handlers: [handler] });
});
afterAll(async () => {
  await hg.destroy();
});

const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;

describe("fairness between tenants", () => {
  it(`a ${SMALL}-event tenant beside a ${BIG}-event tenant, all due at once: the small one is served before the large one's backlog, none early`, async () => {
    // The large tenant sorts first, so due order (ties by member) would serve it first.
    const big = freshTenant("a-big");
    const small = freshTenant("z-small");
    // Dispatch paused while the events are created (as after an incident), so none goes straight to
    // the queue on create and all are due together when dispatch resumes.
    await setDispatchPaused(hg.redis, hg.config.keyPrefix, true);
    const runAt = new Date(Date.now() + 1_000).toISOString();
    for (let i = 0; i < BIG; i += 500) {
      const results = await hg.events.scheduleBatch(
        big,
        Array.from({ length: Math.min(500, BIG - i) }, (_, j) => ({
          id: `b${i + j}`,
          type: "test.fair",
          payload: {},
          runAt,
        })),
      );
      expect(results.every((r) => r.ok)).toBe(true);
    }
    const smallResults = await hg.events.scheduleBatch(
      small,
      Array.from({ length: SMALL }, (_, j) => ({ id: `s${j}`, type: "test.fair", payload: {}, runAt })),
    );
    expect(smallResults.every((r) => r.ok)).toBe(true);
    await setDispatchPaused(hg.redis, hg.config.keyPrefix, false);
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await eventually(
        async () => (order.length >= BIG + SMALL ? true : undefined),
        90_000,
        "every event started",
      );
    } finally {
      await runtime.stop();
    }
    const count = (tenant: string) => order.filter((t) => t === tenant).length;
    expect(count(small)).toBe(SMALL);
    expect(count(big)).toBe(BIG);
    for (const late of [...lateness.get(small)!, ...lateness.get(big)!])
      expect(late).toBeGreaterThanOrEqual(0);
    const lastSmall = order.lastIndexOf(small);
    const bigBefore = order.slice(0, lastSmall).filter((t) => t === big).length;
    console.log(
      `fairness: small tenant p99 ${p99(lateness.get(small)!)} ms late, big tenant p99 ${p99(lateness.get(big)!)} ms late; ` +
        `the small tenant's last start came after ${bigBefore} of the big tenant's ${BIG}`,
    );
    expect(bigBefore).toBeLessThan(BIG / 3);
  }, 150_000);
});
