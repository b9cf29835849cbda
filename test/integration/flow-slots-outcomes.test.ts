import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { limitKeys, memberOf } from "../../shared/engine/keys.ts";
import { DependencyUnavailableError, NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, signal, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * A concurrency slot comes back on every outcome, not only on success: a retry, a dead letter and
 * an attempt given back each free it at once. The run lease is the default (handler timeout 30 s +
 * margin 30 s), so a slot that is not given back holds the type for a minute; the flow-control
 * tests use short leases and handlers that succeed, where lease expiry would hide such a leak.
 */
type Outcome = "retry" | "dead" | "givenBack" | "succeed";

/** Each run waits for the test to let it finish (`finish`), then ends as its payload says. */
const finish = new Map<string, ReturnType<typeof signal>>();
const startedAt = new Map<string, number>();
const handler = defineHandler(
  "test.slot",
  z.object({ outcome: z.enum(["retry", "dead", "givenBack", "succeed"]) }),
  async (payload, context) => {
    startedAt.set(context.id, Date.now());
    await finish.get(context.id)?.promise;
    if (payload.outcome === "retry") throw new Error("told to fail, retryable");
    if (payload.outcome === "dead") throw new NonRetryableError("told to fail for good");
    if (payload.outcome === "givenBack")
      throw new DependencyUnavailableError("the test's dependency", { retryAfterMs: 10 });
  },
);

let hg: TestHourglass;
beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [handler] });
});
afterAll(async () => {
  await hg.destroy();
});

describe("concurrency slots", () => {
  it("a retry, a dead letter and an attempt given back each give the slot back at once: the next event starts long before the run lease could expire", async () => {
    // The default run lease: a slot kept by mistake would hold the type this long.
    const leaseMs = hg.config.handlerTimeoutMs + hg.config.runLeaseMarginMs;
    expect(leaseMs).toBeGreaterThanOrEqual(60_000);
    // Generous for a loaded machine (a dispatcher tick, a send, a poll), and far below the lease.
    const nextStartsWithinMs = 10_000;

    const tenant = freshTenant("slots");
    await hg.flow.put(tenant, "test.slot", { maxConcurrency: 1 });
    const slots = limitKeys(hg.config.keyPrefix, tenant).slots("test.slot");
    // The failed attempts come back an hour later, if at all: not during this test.
    const later = { strategy: "fixed" as const, delayMs: 3_600_000 };
    const schedule = async (id: string, outcome: Outcome) => {
      if (outcome !== "succeed") finish.set(id, signal());
      const { event } = await hg.events.schedule(tenant, {
        id,
        type: "test.slot",
        payload: { outcome },
        delaySeconds: 0,
        maxAttempts: 3,
        backoff: later,
      });
      return event.id;
    };
    const started = (id: string, what = `${id} to start`) =>
      eventually(async () => startedAt.get(id), nextStartsWithinMs, what);
    const statusOf = (id: string, status: string) =>
      eventually(
        async () => {
          const view = await hg.events.get(tenant, id);
          return view.status === status ? view : undefined;
        },
        15_000,
        `${id} ${status}`,
      );

    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await schedule("retried", "retry");
      await started("retried");
      const steps = [
        { id: "retried", status: "retrying", attempts: 1, next: "dead", nextOutcome: "dead" },
        { id: "dead", status: "dead", attempts: 1, next: "given-back", nextOutcome: "givenBack" },
        { id: "given-back", status: "retrying", attempts: 0, next: "last", nextOutcome: "succeed" },
      ] as const;
      for (const step of steps) {
        // The next event is due now and waits for the one slot, held by the running event.
        await schedule(step.next, step.nextOutcome);
        await eventually(
          async () => ((await hg.events.get(tenant, step.next)).heldBy === "concurrency" ? true : undefined),
          15_000,
          `${step.next} held back by concurrency`,
        );
        expect(startedAt.has(step.next)).toBe(false);
        expect(await hg.redis.zrange(slots, 0, -1)).toEqual([memberOf(tenant, step.id)]);

        finish.get(step.id)!.fire();
        const ended = await statusOf(step.id, step.status);
        expect(ended.attempts).toBe(step.attempts);
        const endedAt = Date.now();
        // The slot came back with the outcome: the next event takes it, not after a lease.
        const nextStart = await started(
          step.next,
          `${step.next} to start after ${step.id} ended ${step.status} (its slot given back)`,
        );
        expect(nextStart - endedAt).toBeLessThan(nextStartsWithinMs);
        if (step.nextOutcome !== "succeed")
          expect(await hg.redis.zrange(slots, 0, -1)).toEqual([memberOf(tenant, step.next)]);
      }
      await statusOf("last", "succeeded");
      await eventually(
        async () => ((await hg.redis.zcard(slots)) === 0 ? true : undefined),
        nextStartsWithinMs,
        "the last slot to come back",
      );
    } finally {
      for (const gate of finish.values()) gate.fire();
      await runtime.stop();
    }
  }, 120_000);
});
