import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { Crash, captured, crashOn, engine, freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 2 (and 8) through replay, retry and bury: a process dies just before or just after
 * each of its writes (journal, index, queue), then the normal runtime takes over as a fresh
 * process would. Every event must end where it should: run again if nothing final was recorded,
 * never run again once it was, and never before the backoff the journal recorded.
 */
const rec = recorder();
/** Fails for good on an event's first run, succeeds on every later one: a replay then succeeds. */
const firstRuns = new Map<string, number>();
const onceFatal = defineHandler("test.once-fatal", z.object({}), async (_payload, context) => {
  const runs = (firstRuns.get(context.id) ?? 0) + 1;
  firstRuns.set(context.id, runs);
  if (runs === 1) throw new NonRetryableError("fails for good the first time");
});

let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
      HOURGLASS_HANDLER_TIMEOUT_SECONDS: "1",
      HOURGLASS_RUN_LEASE_MARGIN_MS: "200",
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "200",
    },
    { handlers: [rec.handler, onceFatal] },
  );
});

afterAll(async () => {
  await hg.destroy();
});

/** Schedules an event due now through a process that keeps its message, and returns it. */
async function scheduled(tenant: string, input: Record<string, unknown>) {
  const { messages, transport } = captured();
  const { service } = engine(hg, { transport });
  await service.schedule(tenant, { delaySeconds: 0, ...input });
  expect(messages).toHaveLength(1);
  return messages[0]!;
}

/** A dead letter of the once-fatal type: its replay succeeds. */
async function deadLetter(tenant: string, id: string) {
  const message = await scheduled(tenant, { id, type: "test.once-fatal", payload: {} });
  expect((await hg.worker.process(message)).outcome).toBe("dead");
}

/** Runs the normal runtime until `check` holds. */
async function recovers<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000) {
  const runtime = startRuntime(hg, { tickMs: 100 });
  try {
    return await eventually(check, timeoutMs, what);
  } finally {
    await runtime.stop();
  }
}

const status = (tenant: string, id: string, wanted: string) => async () =>
  (await hg.events.get(tenant, id)).status === wanted ? true : undefined;

describe("replay: a crash before or after each write", () => {
  it("before the journal write: nothing changed, and the replay can be asked again", async () => {
    const tenant = freshTenant("replay");
    await deadLetter(tenant, "r-before");
    const { service } = engine(hg, { journal: crashOn(hg.journal!, "replay", "before") });
    await expect(service.replay(tenant, "r-before")).rejects.toBeInstanceOf(Crash);
    expect((await hg.events.get(tenant, "r-before")).status).toBe("dead");
    await hg.events.replay(tenant, "r-before");
    await recovers(status(tenant, "r-before", "succeeded"), "the replay to run");
    expect(firstRuns.get("r-before")).toBe(2);
  });

  it("after the journal write, before the index: the recovery sweep finishes the replay", async () => {
    const tenant = freshTenant("replay");
    await deadLetter(tenant, "r-sweep");
    const { service } = engine(hg, { index: crashOn(hg.index, "revive", "before") });
    await expect(service.replay(tenant, "r-sweep")).rejects.toBeInstanceOf(Crash);
    expect((await hg.index.inspect(`${tenant}/r-sweep`))?.status).toBe("dead");
    await recovers(status(tenant, "r-sweep", "succeeded"), "the half-done replay to run");
    expect(firstRuns.get("r-sweep")).toBe(2);
  });

  it("after the journal write, before the index: a second replay works instead of answering 409", async () => {
    const tenant = freshTenant("replay");
    await deadLetter(tenant, "r-again");
    const { service } = engine(hg, { index: crashOn(hg.index, "revive", "before") });
    await expect(service.replay(tenant, "r-again")).rejects.toBeInstanceOf(Crash);
    await hg.events.replay(tenant, "r-again");
    await recovers(status(tenant, "r-again", "succeeded"), "the replay to run");
    expect(firstRuns.get("r-again")).toBe(2);
  });

  it("after the index write, before the send: sent again when its lease runs out", async () => {
    const tenant = freshTenant("replay");
    await deadLetter(tenant, "r-unsent");
    const { transport } = captured();
    const { service } = engine(hg, { transport: crashOn(transport, "send", "before") });
    await expect(service.replay(tenant, "r-unsent")).rejects.toBeInstanceOf(Crash);
    expect((await hg.index.inspect(`${tenant}/r-unsent`))?.status).toBe("dispatched");
    await recovers(status(tenant, "r-unsent", "succeeded"), "the replay to run");
    expect(firstRuns.get("r-unsent")).toBe(2);
  });
});

describe("retry: a crash before or after each write", () => {
  const failOnce = { type: "test.record", payload: { failTimes: 1 } };

  it("before the journal write: the attempt counts, and the event runs again", async () => {
    const tenant = freshTenant("retry");
    const message = await scheduled(tenant, { id: "t-before", ...failOnce });
    const { worker } = engine(hg, { journal: crashOn(hg.journal!, "markRetrying", "before") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    await recovers(status(tenant, "t-before", "succeeded"), "the retry");
    expect(rec.runsOf("t-before").map((r) => r.attempt)).toEqual([1, 2]);
  });

  it("after the journal write, before the index: the backoff the journal recorded is honoured", async () => {
    const tenant = freshTenant("retry");
    const message = await scheduled(tenant, {
      id: "t-backoff",
      ...failOnce,
      backoff: { strategy: "fixed", delayMs: 4_000, maxDelayMs: 4_000 },
    });
    const { worker } = engine(hg, { index: crashOn(hg.index, "retry", "before") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    const item = await hg.journal!.get(tenant, "t-backoff");
    expect(item?.status).toBe("retrying");
    // Later than the run lease (1.2 s), which is when the dispatcher finds the leftover entry.
    const retryAt = item!.runAt;
    expect(retryAt).toBeGreaterThanOrEqual(Date.now() + 3_000);
    await recovers(status(tenant, "t-backoff", "succeeded"), "the retry");
    const runs = rec.runsOf("t-backoff");
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(runs[1]!.startedAt).toBeGreaterThanOrEqual(retryAt);
  });

  it("after the index write, before the send: sent again when its lease runs out, not before the backoff", async () => {
    const tenant = freshTenant("retry");
    const message = await scheduled(tenant, {
      id: "t-unsent",
      ...failOnce,
      backoff: { strategy: "fixed", delayMs: 2_000, maxDelayMs: 2_000 },
    });
    const { worker } = engine(hg, { index: crashOn(hg.index, "retry", "after") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    const retryAt = (await hg.journal!.get(tenant, "t-unsent"))!.runAt;
    await recovers(status(tenant, "t-unsent", "succeeded"), "the retry");
    const runs = rec.runsOf("t-unsent");
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(runs[1]!.startedAt).toBeGreaterThanOrEqual(retryAt);
  });
});

describe("bury: a crash before or after each write", () => {
  const fatal = { type: "test.record", payload: { fatal: true } };

  it("before the journal write: the death was not recorded, so the event runs again and dies", async () => {
    const tenant = freshTenant("bury");
    const message = await scheduled(tenant, { id: "b-before", ...fatal });
    const { worker } = engine(hg, { journal: crashOn(hg.journal!, "markDead", "before") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    await recovers(status(tenant, "b-before", "dead"), "the second death");
    expect(rec.runsOf("b-before").map((r) => r.attempt)).toEqual([1, 2]);
  });

  it("after the journal write, before the index: dead is final, it never runs again, and replay still works", async () => {
    const tenant = freshTenant("bury");
    const message = await scheduled(tenant, { id: "b-between", ...fatal });
    const { worker } = engine(hg, { index: crashOn(hg.index, "bury", "before") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    expect((await hg.index.inspect(`${tenant}/b-between`))?.status).toBe("running");
    // The run lease runs out; the dispatcher finds the journal says dead and drops the entry.
    await recovers(
      async () => ((await hg.index.inspect(`${tenant}/b-between`)) === undefined ? true : undefined),
      "the leftover running entry to be dropped",
    );
    expect(rec.runsOf("b-between")).toHaveLength(1);
    expect((await hg.events.get(tenant, "b-between")).status).toBe("dead");
    await hg.events.replay(tenant, "b-between");
    await recovers(
      async () => (rec.runsOf("b-between").length === 2 ? true : undefined),
      "the replay to run",
    );
  });

  it("after the index write: dead in both, and nothing runs it again", async () => {
    const tenant = freshTenant("bury");
    const message = await scheduled(tenant, { id: "b-after", ...fatal });
    const { worker } = engine(hg, { index: crashOn(hg.index, "bury", "after") });
    await expect(worker.process(message)).rejects.toBeInstanceOf(Crash);
    expect((await hg.index.inspect(`${tenant}/b-after`))?.status).toBe("dead");
    const runtime = startRuntime(hg, { tickMs: 100 });
    // Longer than the run lease, the dispatch lease and the recovery grace together.
    await new Promise((done) => setTimeout(done, 4_000));
    await runtime.stop();
    expect(rec.runsOf("b-after")).toHaveLength(1);
    expect((await hg.events.get(tenant, "b-after")).status).toBe("dead");
  });
});
