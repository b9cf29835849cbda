import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { memberOf } from "../../shared/engine/keys.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { FlowControl } from "../../shared/limits/flow-control.ts";
import type { LimitsInput } from "../../shared/limits/model.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { Crash, crashOn, engine, freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Flow control on the real stack (Redis, DynamoDB Local, the SQS emulator): rate and concurrency
 * limits hold across every worker, held events are never lost nor early, slots come back on lease
 * expiry, and a fast-check property changes limits at random while events run.
 */
interface Span {
  readonly tenant: string;
  readonly id: string;
  readonly runAt: number;
  readonly start: number;
  end: number;
}
const spans: Span[] = [];
const handler = defineHandler(
  "test.flow",
  z.object({ workMs: z.number().int().optional() }),
  async (payload, context) => {
    const span: Span = {
      tenant: context.tenant,
      id: context.id,
      runAt: context.runAt.getTime(),
      start: Date.now(),
      end: 0,
    };
    spans.push(span);
    await sleep(payload.workMs ?? 0);
    span.end = Date.now();
  },
);

let hg: TestHourglass;
beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_HANDLER_TIMEOUT_SECONDS: "1",
      HOURGLASS_RUN_LEASE_MARGIN_MS: "200",
      HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
    },
    { handlers: [handler] },
  );
});
afterAll(async () => {
  await hg.destroy();
});

const of = (tenant: string) => spans.filter((s) => s.tenant === tenant);

/** Most starts in any window of `windowMs` (windows begin at each start). */
function maxStartsIn(starts: number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! < sorted[i]! - windowMs + 1) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/** Most handlers running at one time. */
function maxOverlap(runs: Span[]): number {
  const edges = runs.flatMap((r) => [
    [r.start, 1],
    [r.end, -1],
  ]);
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let best = 0;
  for (const [, delta] of edges) {
    now += delta!;
    best = Math.max(best, now);
  }
  return best;
}

async function schedule(tenant: string, count: number, workMs: number, spreadMs = 0) {
  const base = Date.now();
  const results = await hg.events.scheduleBatch(
    tenant,
    Array.from({ length: count }, (_, i) => ({
      id: `e${i}`,
      type: "test.flow",
      payload: { workMs },
      runAt: new Date(base + Math.floor((i * spreadMs) / count)).toISOString(),
    })),
  );
  expect(results.every((r) => r.ok)).toBe(true);
}

/**
 * Held events come back a dispatcher tick at a time (a rate's bucket holds at most `burst` per
 * tick, a freed slot is refilled on the next one), so how long a run takes is how long ticks take:
 * seconds on a loaded machine. The wait ends as soon as they are done.
 */
async function allDone(tenant: string, count: number, timeoutMs = 60_000) {
  await eventually(
    async () => {
      const stats = await hg.events.stats(tenant);
      return stats.byStatus.succeeded === count ? stats : undefined;
    },
    timeoutMs,
    `${count} events of ${tenant} succeeded`,
  );
}

function expectNoneEarlyNoneTwice(tenant: string, count: number) {
  const runs = of(tenant).filter((s) => s.end > 0);
  expect(runs.length).toBe(count);
  expect(new Set(runs.map((r) => r.id)).size).toBe(count);
  for (const run of runs) expect(run.start).toBeGreaterThanOrEqual(run.runAt);
}

describe("flow control", () => {
  it("a rate limit holds across every worker (starts in any second ≤ rate + burst), nothing lost, none early", async () => {
    const tenant = freshTenant("rate");
    await hg.flow.put(tenant, "test.flow", { ratePerSecond: 5, burst: 2 });
    const runtime = startRuntime(hg, { tickMs: 100, pollers: 4 });
    try {
      await schedule(tenant, 20, 0);
      // Held back, and said so, while the bucket refills.
      await eventually(async () => {
        const view = await hg.events.get(tenant, "e19");
        return view.heldBy === "rate" || view.status === "succeeded" ? true : undefined;
      }, 10_000);
      await allDone(tenant, 20);
    } finally {
      await runtime.stop();
    }
    expectNoneEarlyNoneTwice(tenant, 20);
    // The bucket allows burst + rate in any second; a few ms of admission-to-handler jitter allowed.
    expect(
      maxStartsIn(
        of(tenant).map((s) => s.start),
        950,
      ),
    ).toBeLessThanOrEqual(2 + 5);
    const starts = of(tenant).map((s) => s.start);
    // 20 starts at 5/s after a burst of 2 take at least 3.5 s.
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(3_000);
  }, 90_000);

  it("maxConcurrency holds across workers, and every outcome gives the slot back", async () => {
    const tenant = freshTenant("conc");
    await hg.flow.put(tenant, "test.flow", { maxConcurrency: 2 });
    const runtime = startRuntime(hg, { tickMs: 100, pollers: 4 });
    try {
      await schedule(tenant, 12, 150);
      await allDone(tenant, 12);
    } finally {
      await runtime.stop();
    }
    expectNoneEarlyNoneTwice(tenant, 12);
    expect(maxOverlap(of(tenant))).toBeLessThanOrEqual(2);
    expect(maxOverlap(of(tenant))).toBe(2);
    // Every slot came back.
    expect(await hg.redis.zcard(`{${hg.config.keyPrefix}:limits:${tenant}}:slots:test.flow`)).toBe(0);
  }, 90_000);

  it("one admission call decides each event against those before it in the call, and free gives every slot back", async () => {
    const tenant = freshTenant("call");
    await hg.flow.put(tenant, "test.flow", { maxConcurrency: 2 });
    const slot = (id: string, type = "test.flow") => ({ tenant, type, member: memberOf(tenant, id) });
    const admitted = { admitted: true };
    const refused = { admitted: false, reason: "concurrency", retryAfterMs: 0 };
    // x1 twice in one call is one slot; x3 finds the two taken earlier in the same call.
    expect(
      await hg.flow.admit([slot("x1"), slot("x2"), slot("x1"), slot("x3"), slot("y1", "test.other")]),
    ).toEqual([admitted, admitted, admitted, refused, admitted]);
    expect(await hg.flow.admit([slot("x4")])).toEqual([refused]);
    const slots = `{${hg.config.keyPrefix}:limits:${tenant}}:slots:test.flow`;
    const running = `{${hg.config.keyPrefix}:limits:${tenant}}:running`;
    expect(await hg.redis.zcard(slots)).toBe(2);
    expect(await hg.redis.zcard(running)).toBe(3);
    await hg.flow.free([slot("x1"), slot("x2"), slot("y1", "test.other")]);
    expect(await hg.redis.zcard(slots)).toBe(0);
    expect(await hg.redis.zcard(running)).toBe(0);
    expect(await hg.flow.admit([slot("x3"), slot("x4"), slot("x5")])).toEqual([admitted, admitted, refused]);
    await hg.flow.free([slot("x3"), slot("x4")]);
  });

  it("one admission call holds the tenant's cap on running events across types, a repeat taking one place", async () => {
    const tenant = freshTenant("cap");
    const capped = new FlowControl(
      hg.redis,
      { ...hg.config, tenantLimits: { ...hg.config.tenantLimits, maxRunning: 2 } },
      undefined,
      Date.now,
    );
    const slot = (id: string, type = "test.a") => ({ tenant, type, member: memberOf(tenant, id) });
    const admitted = { admitted: true };
    const refused = { admitted: false, reason: "concurrency", retryAfterMs: 0 };
    expect(await capped.admit([slot("a"), slot("b", "test.b"), slot("a"), slot("c")])).toEqual([
      admitted,
      admitted,
      admitted,
      refused,
    ]);
    // Admitted by the call before: again, in no new place; a newcomer still finds the cap full.
    expect(await capped.admit([slot("a"), slot("d", "test.b")])).toEqual([admitted, refused]);
    expect(await hg.redis.zcard(`{${hg.config.keyPrefix}:limits:${tenant}}:running`)).toBe(2);
    await capped.free([slot("a"), slot("b", "test.b")]);
    expect(await capped.admit([slot("d", "test.b"), slot("e"), slot("f")])).toEqual([
      admitted,
      admitted,
      refused,
    ]);
    await capped.free([slot("d", "test.b"), slot("e")]);
    expect(await hg.redis.zcard(`{${hg.config.keyPrefix}:limits:${tenant}}:running`)).toBe(0);
  });

  it("a worker that dies holding a slot gives it back when its lease runs out", async () => {
    const tenant = freshTenant("crash");
    await hg.flow.put(tenant, "test.flow", { maxConcurrency: 1 });
    // A worker that runs e0 and dies before giving its slot back (the free never happens).
    const { worker } = engine(hg, { flow: crashOn(hg.flow, "free", "before") });
    // Both are due now, so creating them sends them to the queue at once (the runtime is not
    // polling yet); e0 is also handed straight to the dying worker.
    await schedule(tenant, 2, 0);
    const member = memberOf(tenant, "e0");
    const live = await hg.index.inspect(member);
    expect(live?.status).toBe("dispatched");
    const message = {
      member,
      shard: hg.index.shardOf(member),
      gen: live!.gen,
      runAt: live!.runAt,
      attempt: 0,
    };
    const slots = `{${hg.config.keyPrefix}:limits:${tenant}}:slots:test.flow`;
    const beforeStart = Date.now();
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    const held = await hg.redis.zrange(slots, 0, -1, "WITHSCORES");
    expect(held).toHaveLength(2);
    // The slot's deadline (Redis's clock, this machine's): taken at the start, for the handler
    // timeout 1 s + margin 0.2 s.
    const deadline = Number(held[1]);
    expect(deadline).toBeGreaterThanOrEqual(beforeStart + 1_200);
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await allDone(tenant, 2);
    } finally {
      await runtime.stop();
    }
    // The runtime starts e1 only once e0's slot has expired.
    const e1 = of(tenant).find((s) => s.id === "e1")!;
    expect(e1.start).toBeGreaterThanOrEqual(deadline);
    expect(await hg.redis.zcard(slots)).toBe(0);
  }, 90_000);
});

/** One step of a run: after `afterMs`, set these limits. */
const limitChange = fc.record({
  afterMs: fc.integer({ min: 0, max: 1_500 }),
  paused: fc.boolean(),
  rate: fc.integer({ min: 2, max: 30 }),
  burst: fc.integer({ min: 1, max: 6 }),
});

describe("flow-control property", () => {
  it("random limit changes during a run: never more than maxConcurrency running, never more starts in a second than rate + burst, nothing lost, none early", async () => {
    const runtime = startRuntime(hg, { tickMs: 100, pollers: 4 });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 4 }),
          fc.array(limitChange, { minLength: 1, maxLength: 4 }),
          fc.integer({ min: 8, max: 24 }),
          fc.integer({ min: 0, max: 80 }),
          async (maxConcurrency, changes, count, workMs) => {
            const tenant = freshTenant("prop");
            const set = (limits: LimitsInput) => hg.flow.put(tenant, "test.flow", limits);
            const first = changes[0]!;
            await set({ maxConcurrency, ratePerSecond: first.rate, burst: first.burst });
            await schedule(tenant, count, workMs, 1_000);
            let elapsed = 0;
            for (const change of [...changes].sort((a, b) => a.afterMs - b.afterMs)) {
              await sleep(change.afterMs - elapsed);
              elapsed = change.afterMs;
              await set({
                maxConcurrency,
                paused: change.paused,
                ratePerSecond: change.rate,
                burst: change.burst,
              });
            }
            // Until here a rate (one of these) was always in force; from here on none, and no
            // pause, so everything must finish.
            const rateLiftedAt = Date.now();
            await set({ maxConcurrency });
            await allDone(tenant, count);
            expectNoneEarlyNoneTwice(tenant, count);
            expect(maxOverlap(of(tenant))).toBeLessThanOrEqual(maxConcurrency);
            const limited = of(tenant)
              .map((s) => s.start)
              .filter((t) => t < rateLiftedAt);
            const bound = Math.max(...changes.map((c) => c.rate)) + Math.max(...changes.map((c) => c.burst));
            expect(maxStartsIn(limited, 950)).toBeLessThanOrEqual(bound);
          },
        ),
        { numRuns: Number(process.env.FC_RUNS ?? 3) },
      );
    } finally {
      await runtime.stop();
    }
  }, 240_000);
});
