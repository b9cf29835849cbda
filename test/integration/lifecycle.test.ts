import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { EventStateConflictError, IdempotencyConflictError } from "../../shared/events/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

const rec = recorder();

/** Throws what its payload names: values a handler may throw that are not Errors, or odd Errors. */
const thrown: Record<string, () => unknown> = {
  "null-prototype": () => Object.create(null),
  "throwing-toString": () => ({
    toString() {
      throw new Error("no string for you");
    },
  }),
  "throwing-message": () =>
    Object.defineProperty(new Error("x"), "message", {
      get() {
        throw new Error("no message for you");
      },
    }),
  huge: () => "x".repeat(5_000_000),
};
const throwing = defineHandler("test.throws", z.object({ kind: z.enum(Object.keys(thrown)) }), async (p) => {
  throw thrown[p.kind]!();
});
let hg: TestHourglass;
let runtime: Runtime;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "200",
      // Short enough that a wait in a test outlasts a lease running out and a recovery sweep,
      // the two ways a forgotten cancel or a stale message could come back.
      HOURGLASS_DISPATCH_LEASE_SECONDS: "6",
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
    },
    { handlers: [rec.handler, throwing] },
  );
  runtime = startRuntime(hg, { tickMs: 100 });
});

afterAll(async () => {
  await runtime.stop();
  await hg.destroy();
});

const statusOf = async (tenant: string, id: string, status: string) => {
  const view = await hg.events.get(tenant, id);
  return view.status === status ? view : undefined;
};

// Concurrent: each test has its own tenant and reads only its own events' runs, and most of
// their time is waiting on the one runtime, so side by side they prove the same in less time.
describe.concurrent("an event's life on the real local stack", () => {
  it("runs once, on time, and is recorded as succeeded in the journal", async () => {
    // Prepare
    const tenant = freshTenant("once");
    const runAt = new Date(Date.now() + 2_000).toISOString();
    // Act
    const { event, outcome } = await hg.events.schedule(tenant, { type: "test.record", runAt, payload: {} });
    expect(outcome).toBe("created");
    expect(event.status).toBe("scheduled");
    // Assess
    const done = await eventually(() => statusOf(tenant, event.id, "succeeded"), 15_000, "success");
    expect(done.attempts).toBe(1);
    const runs = rec.runsOf(event.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.startedAt).toBeGreaterThanOrEqual(Date.parse(runAt));
    const item = await hg.journal!.get(tenant, event.id);
    expect(item?.status).toBe("succeeded");
    expect(item?.ttl).toBeGreaterThan(Date.now() / 1000);
    expect(item?.pshard).toBeUndefined();
  });

  it("treats a repeated id as the same event, and different content under it as a conflict", async () => {
    // Prepare: a tenant of its own, so the count below is this test's alone.
    const tenant = freshTenant("repeat");
    const input = { id: "order-42-reminder", type: "test.record", delaySeconds: 60, payload: { label: "a" } };
    // Act
    const first = await hg.events.schedule(tenant, input);
    const again = await hg.events.schedule(tenant, input);
    // Assess
    expect(first.outcome).toBe("created");
    expect(again.outcome).toBe("existing");
    expect(again.event.runAt).toBe(first.event.runAt);
    await expect(hg.events.schedule(tenant, { ...input, payload: { label: "b" } })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    const stats = await hg.events.stats(tenant);
    expect(stats.byType["test.record"]?.scheduled).toBe(1);
  });

  it("never runs an event cancelled after its message reached the queue, through a lease expiry and recovery sweeps", async () => {
    // Prepare
    const tenant = freshTenant("cancel");
    // 1.5 s ahead is inside the look-ahead: the message goes to SQS when it is scheduled.
    const { event } = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 1.5,
      payload: {},
    });
    expect((await hg.events.get(tenant, event.id)).status).toBe("dispatched");
    // Act
    const cancelled = await hg.events.cancel(tenant, event.id);
    expect(cancelled.status).toBe("cancelled");
    // Assess. Wait past the queued message's delivery, the dispatch lease running out (when a forgotten
    // entry would be sent again) and the recovery grace (when the sweep would restore it).
    const quietUntil = event.runAt + hg.config.dispatchLeaseMs + hg.config.recovery.graceMs + 2_000;
    await new Promise((done) => setTimeout(done, quietUntil - Date.now()));
    expect(rec.runsOf(event.id)).toHaveLength(0);
    expect((await hg.events.get(tenant, event.id)).status).toBe("cancelled");
    expect(await hg.index.inspect(`${tenant}/${event.id}`)).toBeUndefined();
    // Cancelling again is harmless; the journal keeps the first answer.
    expect((await hg.events.cancel(tenant, event.id)).status).toBe("cancelled");
  }, 30_000);

  it("retries with backoff, then dead-letters, and a replay runs it again", async () => {
    // Prepare
    const tenant = freshTenant("retry");
    // Act
    const { event } = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0,
      maxAttempts: 3,
      payload: { failTimes: 3 },
    });
    // Assess
    const dead = await eventually(() => statusOf(tenant, event.id, "dead"), 20_000, "dead letter");
    expect(dead.attempts).toBe(3);
    expect(dead.lastError).toContain("told to fail attempt 3");
    expect(rec.runsOf(event.id).map((r) => r.attempt)).toEqual([1, 2, 3]);
    const letters = await hg.events.deadLetters(tenant, 10);
    expect(letters.events.map((e) => e.id)).toEqual([event.id]);
    await expect(hg.events.cancel(tenant, event.id)).rejects.toBeInstanceOf(EventStateConflictError);

    // Act: after a replay the attempts start again from 1.
    await hg.events.replay(tenant, event.id);
    // Assess
    await eventually(() => statusOf(tenant, event.id, "dead"), 20_000, "dead again");
    expect(rec.runsOf(event.id).map((r) => r.attempt)).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it("sends a non-retryable failure straight to the dead letters", async () => {
    // Prepare
    const tenant = freshTenant("fatal");
    // Act
    const { event } = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0,
      payload: { fatal: true },
    });
    // Assess
    const dead = await eventually(() => statusOf(tenant, event.id, "dead"), 15_000, "dead letter");
    expect(dead.attempts).toBe(1);
    expect(rec.runsOf(event.id)).toHaveLength(1);
  });

  it("retries and dead-letters a handler that throws what is not an Error, with a readable lastError", async () => {
    const tenant = freshTenant("thrown");
    const ids = await Promise.all(
      Object.keys(thrown).map(async (kind) => {
        const { event } = await hg.events.schedule(tenant, {
          type: "test.throws",
          delaySeconds: 0,
          maxAttempts: 2,
          payload: { kind },
        });
        return event.id;
      }),
    );
    for (const id of ids) {
      const dead = await eventually(() => statusOf(tenant, id, "dead"), 20_000, `dead letter ${id}`);
      expect(dead.attempts).toBe(2);
      expect(typeof dead.lastError).toBe("string");
      expect(dead.lastError!.length).toBeGreaterThan(0);
      expect(dead.lastError!.length).toBeLessThanOrEqual(1_000);
    }
  }, 30_000);

  it("reschedules a pending event and refuses to reschedule a finished one", async () => {
    // Prepare
    const tenant = freshTenant("move");
    const { event } = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 3_600,
      payload: {},
    });
    // Act
    const moved = await hg.events.reschedule(tenant, event.id, { delaySeconds: 1 });
    // Assess
    expect(moved.runAt).toBeLessThan(event.runAt);
    await eventually(() => statusOf(tenant, event.id, "succeeded"), 15_000, "success");
    await expect(hg.events.reschedule(tenant, event.id, { delaySeconds: 5 })).rejects.toBeInstanceOf(
      EventStateConflictError,
    );
  });

  it("drops the message already queued for the old time, and runs a rescheduled event once, at its new time", async () => {
    // Prepare
    const tenant = freshTenant("stale");
    // Inside the look-ahead: its message (gen 1, due in 1.5 s) is in SQS at once.
    const { event } = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 1.5,
      payload: {},
    });
    expect((await hg.events.get(tenant, event.id)).status).toBe("dispatched");
    // Act
    const moved = await hg.events.reschedule(tenant, event.id, { delaySeconds: 4 });
    // Assess
    expect(moved.runAt).toBeGreaterThan(event.runAt + 2_000);
    // The stale message arrives first and must be dropped; the new one runs the event.
    await eventually(() => statusOf(tenant, event.id, "succeeded"), 15_000, "success");
    // Until the old message's lease would have run out: nothing runs it a second time.
    await new Promise((done) =>
      setTimeout(done, Math.max(0, event.runAt + hg.config.dispatchLeaseMs - Date.now())),
    );
    const runs = rec.runsOf(event.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.startedAt).toBeGreaterThanOrEqual(moved.runAt);
  }, 30_000);
});
