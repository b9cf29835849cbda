import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { EventJournal } from "../../shared/journal/journal.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { Crash, captured, crashOn, engine } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 2, at least once: a process dies between any two steps of enqueue, claim, send, run
 * and ack, and the event still runs. A crash is a `Crash` thrown by a wrapped dependency at that
 * point; nothing after it in that process happens. Then the normal runtime takes over, as a fresh
 * process would, and the event must succeed.
 */

const rec = recorder();
let hg: TestHourglass;
let tenantCount = 0;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_DISPATCH_LEASE_SECONDS: "1",
      HOURGLASS_HANDLER_TIMEOUT_SECONDS: "1",
      HOURGLASS_RUN_LEASE_MARGIN_MS: "200",
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
    },
    { handlers: [rec.handler] },
  );
});

afterAll(async () => {
  await hg.destroy();
});

async function survives(id: string, tenant: string) {
  const runtime = startRuntime(hg, { tickMs: 100 });
  try {
    return await eventually(
      async () => {
        const view = await hg.events.get(tenant, id);
        return view.status === "succeeded" ? view : undefined;
      },
      // Seconds normally (a lease or sweep of 1 s, then the queue); a loaded machine's stack has
      // stalled for over 20 s. Within the 60 s a test has.
      45_000,
      `${id} to succeed`,
    );
  } finally {
    await runtime.stop();
  }
}

describe("a crash between two steps loses nothing", () => {
  it("enqueue: after the journal write, before the index (found by the recovery sweep)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { transport } = captured();
    const { service } = engine(hg, { transport, index: crashOn(hg.index, "schedule", "before") });
    const id = "journal-only";
    // Act
    await expect(
      service.schedule(tenant, { id, type: "test.record", payload: {}, delaySeconds: 0 }),
    ).rejects.toBeInstanceOf(Crash);
    // Assess
    expect(await hg.index.inspect(`${tenant}/${id}`)).toBeUndefined();
    await survives(id, tenant);
    expect(rec.runsOf(id)).toHaveLength(1);
  });

  it("enqueue: the client retries after the crash, and the repeat indexes the event", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { transport } = captured();
    const { service } = engine(hg, { transport, index: crashOn(hg.index, "schedule", "before") });
    const input = { id: "retried", type: "test.record", payload: {}, delaySeconds: 3_600 };
    await expect(service.schedule(tenant, input)).rejects.toBeInstanceOf(Crash);
    // Act
    const repeat = await hg.events.schedule(tenant, input);
    // Assess
    expect(repeat.outcome).toBe("existing");
    expect(await hg.index.inspect(`${tenant}/retried`)).toMatchObject({ status: "scheduled" });
  });

  it("enqueue: after the index, before the send (redelivered when the lease expires)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { transport } = captured();
    const { service } = engine(hg, { transport: crashOn(transport, "send", "before") });
    // Act
    await expect(
      service.schedule(tenant, { id: "unsent", type: "test.record", payload: {}, delaySeconds: 0 }),
    ).rejects.toBeInstanceOf(Crash);
    // Assess
    expect(await hg.index.inspect(`${tenant}/unsent`)).toMatchObject({ status: "dispatched" });
    await survives("unsent", tenant);
    expect(rec.runsOf("unsent")).toHaveLength(1);
  });

  it("claim: after the claim, before the send", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    // Created by a clock 2 s slow: due in 4 s, past the 5 s look-ahead as that clock sees it (so
    // not sent at create), and within it for the dispatcher's, which claims it at once.
    const slow = engine(hg, { clock: () => Date.now() - 2_000 });
    await slow.service.schedule(tenant, { id: "claimed", type: "test.record", payload: {}, delaySeconds: 6 });
    expect(await hg.index.inspect(`${tenant}/claimed`)).toMatchObject({ status: "scheduled" });
    const { transport } = captured();
    const { dispatcher } = engine(hg, { transport: crashOn(transport, "send", "before") });
    // Act. Each shard is drained on its own, so the crash stops only its shard's dispatch.
    expect((await dispatcher.tick(1_000)).failedShards).toHaveLength(1);
    // Assess
    expect(await hg.index.inspect(`${tenant}/claimed`)).toMatchObject({ status: "dispatched" });
    const done = await survives("claimed", tenant);
    expect(rec.runsOf("claimed")).toHaveLength(1);
    expect(rec.runsOf("claimed")[0]!.startedAt).toBeGreaterThanOrEqual(done.runAt);
  });

  it("send: the queue accepted the message, then lost it", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { transport } = captured();
    const { service } = engine(hg, { transport });
    // Act: the captured transport answers "sent" and keeps the message.
    await service.schedule(tenant, { id: "swallowed", type: "test.record", payload: {}, delaySeconds: 0 });
    // Assess
    await survives("swallowed", tenant);
    expect(rec.runsOf("swallowed")).toHaveLength(1);
  });

  it("run: after the start, before the handler", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { messages, transport } = captured();
    const { service } = engine(hg, { transport });
    await service.schedule(tenant, { id: "started", type: "test.record", payload: {}, delaySeconds: 0 });
    const { worker } = engine(hg, { transport, index: crashOn(hg.index, "startMany", "after") });
    // Act
    await expect(worker.process(messages[0]!)).rejects.toBeInstanceOf(Crash);
    // Assess
    expect(await hg.index.inspect(`${tenant}/started`)).toMatchObject({ status: "running", attempt: 1 });
    const done = await survives("started", tenant);
    // The lost attempt counts: the handler's first real run is attempt 2.
    expect(rec.runsOf("started").map((r) => r.attempt)).toEqual([2]);
    expect(done.attempts).toBe(2);
  });

  it("run: after the handler, before the journal write (runs again: at least once)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { messages, transport } = captured();
    const { service } = engine(hg, { transport });
    await service.schedule(tenant, { id: "unrecorded", type: "test.record", payload: {}, delaySeconds: 0 });
    const { worker } = engine(hg, { transport, journal: crashOn(hg.journal!, "markSucceeded", "before") });
    // Act
    await expect(worker.process(messages[0]!)).rejects.toBeInstanceOf(Crash);
    // Assess
    await survives("unrecorded", tenant);
    expect(rec.runsOf("unrecorded").map((r) => r.attempt)).toEqual([1, 2]);
  });

  it("ack: after the journal write, before the index ack (the journal stops a second run)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const { messages, transport } = captured();
    const { service } = engine(hg, { transport });
    await service.schedule(tenant, { id: "unacked", type: "test.record", payload: {}, delaySeconds: 0 });
    const { worker } = engine(hg, { transport, index: crashOn(hg.index, "ackMany", "before") });
    // Act
    await expect(worker.process(messages[0]!)).rejects.toBeInstanceOf(Crash);
    // Assess
    expect((await hg.journal!.get(tenant, "unacked"))?.status).toBe("succeeded");
    expect(await hg.index.inspect(`${tenant}/unacked`)).toMatchObject({ status: "running" });

    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await eventually(
        async () => ((await hg.index.inspect(`${tenant}/unacked`)) ? undefined : true),
        10_000,
        "cleanup",
      );
    } finally {
      await runtime.stop();
    }
    expect(rec.runsOf("unacked")).toHaveLength(1);
    expect((await hg.events.get(tenant, "unacked")).status).toBe("succeeded");
  });
});

/** The event never runs: the runtime works a few seconds past its time and nothing starts. */
async function neverRuns(id: string, tenant: string, forMs: number) {
  const runtime = startRuntime(hg, { tickMs: 100 });
  try {
    await new Promise((done) => setTimeout(done, forMs));
  } finally {
    await runtime.stop();
  }
  expect(rec.runsOf(id)).toEqual([]);
  expect((await hg.events.get(tenant, id)).status).toBe("cancelled");
}

/**
 * The events journal through a client whose BatchWriteItem requests of fewer than 25 puts go
 * wrong: refused before DynamoDB sees them ("fail"), or applied by DynamoDB and then failing on
 * their way back ("lose-reply": a lost reply, a timeout).
 */
function journalWhoseShortBatches(fault: "fail" | "lose-reply"): EventJournal {
  const client = createDynamoClient();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { RequestItems?: Record<string, unknown[]> };
      const puts = Object.values(input.RequestItems ?? {})[0]?.length ?? 25;
      const short = context.commandName === "BatchWriteItemCommand" && puts < 25;
      if (short && fault === "fail") throw new Error("request failed");
      const result = await next(args);
      if (short) throw new Error("reply lost");
      return result;
    },
    { step: "initialize", name: `short-batches-${fault}` },
  );
  return new EventJournal(client, hg.config.tables.events, hg.config.retentionSeconds);
}

/** 30 events with generated ids: two BatchWriteItem requests, of 25 and 5. */
const thirtyFresh = () =>
  Array.from({ length: 30 }, (_, i) => ({ type: "test.record", payload: { i }, delaySeconds: 3_600 }));

describe("a batch whose journal write fails in part", () => {
  it("answers the events it could not write as failed, and stores and indexes the others", async () => {
    // Prepare: 30 events with generated ids are two BatchWriteItem requests, 25 and 5; the 5 fail.
    const tenant = `crash${tenantCount++}`;
    const journal = journalWhoseShortBatches("fail");
    const { service } = engine(hg, { transport: captured().transport, journal });
    // Act
    const results = await service.scheduleBatch(tenant, thirtyFresh());
    // Assess: 25 created, each durable and indexed; the 5 failed, none stored.
    const created = results.flatMap((r) => (r.ok ? [r.event.id] : []));
    expect(created).toHaveLength(25);
    expect(results.slice(25).every((r) => !r.ok && r.error.message === "request failed")).toBe(true);
    for (const id of created) {
      expect(await hg.journal!.get(tenant, id)).toMatchObject({ status: "scheduled" });
      expect(await hg.index.inspect(`${tenant}/${id}`)).toMatchObject({ status: "scheduled" });
    }
    const stored = await hg.events.list(tenant, { limit: 100 });
    expect(stored.events.map((e) => e.id).sort()).toEqual([...created].sort());
  });

  it("fails the whole call when no event was written, so its failure means nothing was stored", async () => {
    const tenant = `crash${tenantCount++}`;
    const journal = journalWhoseShortBatches("fail");
    const { service } = engine(hg, { transport: captured().transport, journal });
    const inputs = Array.from({ length: 5 }, () => ({
      type: "test.record",
      payload: {},
      delaySeconds: 3_600,
    }));
    await expect(service.scheduleBatch(tenant, inputs)).rejects.toThrow("request failed");
    expect((await hg.events.list(tenant, { limit: 100 })).events).toEqual([]);
  });
});

describe("a batch whose journal write is applied but its reply lost", () => {
  it("answers every stored event as created and indexes it, so no client retry duplicates one", async () => {
    // Prepare: 30 events with generated ids are two BatchWriteItem requests, 25 and 5; the 5 are
    // written, but their request answers an error.
    const tenant = `crash${tenantCount++}`;
    const journal = journalWhoseShortBatches("lose-reply");
    const { service } = engine(hg, { transport: captured().transport, journal });
    // Act
    const results = await service.scheduleBatch(tenant, thirtyFresh());
    // Assess: what the journal holds is exactly what was answered created, and each is indexed.
    const created = results.flatMap((r) => (r.ok ? [r.event.id] : []));
    const stored = await hg.events.list(tenant, { limit: 100 });
    expect(stored.events.map((e) => e.id).sort()).toEqual([...created].sort());
    expect(created).toHaveLength(30);
    for (const id of created)
      expect(await hg.index.inspect(`${tenant}/${id}`)).toMatchObject({ status: "scheduled" });
  });
});

describe("a crash inside a cancel never lets the event run, nor loses the cancel", () => {
  it("cancel: before the index write (nothing changed; the client's retry cancels it)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    await hg.events.schedule(tenant, { id: "cancel-0", type: "test.record", payload: {}, delaySeconds: 2 });
    const { service } = engine(hg, {
      transport: captured().transport,
      index: crashOn(hg.index, "cancel", "before"),
    });
    // Act: the crash, then the client's retry.
    await expect(service.cancel(tenant, "cancel-0")).rejects.toBeInstanceOf(Crash);
    expect(await hg.index.inspect(`${tenant}/cancel-0`)).toBeDefined();
    await hg.events.cancel(tenant, "cancel-0");
    // Assess
    await neverRuns("cancel-0", tenant, 4_000);
  });

  it("cancel: after the index write, before the journal's (the recovery sweep finishes it, never restores it)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    await hg.events.schedule(tenant, { id: "cancel-1", type: "test.record", payload: {}, delaySeconds: 1 });
    const { service } = engine(hg, {
      transport: captured().transport,
      journal: crashOn(hg.journal!, "markCancelled", "before"),
    });
    // Act
    await expect(service.cancel(tenant, "cancel-1")).rejects.toBeInstanceOf(Crash);
    // Assess
    expect((await hg.journal!.get(tenant, "cancel-1"))?.status).toBe("scheduled");
    // Overdue past the 1 s grace: the sweep meets it, and must finish the cancel rather than undo it.
    await neverRuns("cancel-1", tenant, 5_000);
  });

  it("cancel: after the journal write, before the tombstone is confirmed", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    await hg.events.schedule(tenant, { id: "cancel-2", type: "test.record", payload: {}, delaySeconds: 1 });
    const { service } = engine(hg, {
      transport: captured().transport,
      index: crashOn(hg.index, "confirmCancel", "before"),
    });
    // Act
    await expect(service.cancel(tenant, "cancel-2")).rejects.toBeInstanceOf(Crash);
    // Assess
    await neverRuns("cancel-2", tenant, 4_000);
  });
});

describe("a crash inside a reschedule leaves index and journal agreeing, and never fires early", () => {
  async function movedOnce(id: string, tenant: string, runAt: number) {
    const done = await survives(id, tenant);
    expect(rec.runsOf(id)).toHaveLength(1);
    expect(rec.runsOf(id)[0]!.startedAt).toBeGreaterThanOrEqual(runAt);
    expect((await hg.journal!.get(tenant, id))!.runAt).toBe(runAt);
    return done;
  }

  it("reschedule: before the index write (nothing changed; it runs at its first time)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    const first = await hg.events.schedule(tenant, {
      id: "move-0",
      type: "test.record",
      payload: {},
      delaySeconds: 2,
    });
    const { service } = engine(hg, {
      transport: captured().transport,
      index: crashOn(hg.index, "reschedule", "before"),
    });
    // Act
    await expect(
      service.reschedule(tenant, "move-0", { runAt: new Date(Date.now() + 60_000).toISOString() }),
    ).rejects.toBeInstanceOf(Crash);
    // Assess
    await movedOnce("move-0", tenant, first.event.runAt);
  });

  it("reschedule: after the index write, before the journal's (fires at the new time; the journal catches up)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    await hg.events.schedule(tenant, { id: "move-1", type: "test.record", payload: {}, delaySeconds: 1 });
    const later = Date.now() + 4_000;
    const { service } = engine(hg, {
      transport: captured().transport,
      journal: crashOn(hg.journal!, "reschedule", "before"),
    });
    // Act
    await expect(
      service.reschedule(tenant, "move-1", { runAt: new Date(later).toISOString() }),
    ).rejects.toBeInstanceOf(Crash);
    // Assess
    expect((await hg.index.inspect(`${tenant}/move-1`))?.runAt).toBe(later);
    await movedOnce("move-1", tenant, later);
  });

  it("reschedule: after the journal write, before the send (redelivered at the new time)", async () => {
    // Prepare
    const tenant = `crash${tenantCount++}`;
    await hg.events.schedule(tenant, { id: "move-2", type: "test.record", payload: {}, delaySeconds: 60 });
    const later = Date.now() + 3_000;
    const { transport } = captured();
    const { service } = engine(hg, { transport: crashOn(transport, "send", "before") });
    // Act
    await expect(
      service.reschedule(tenant, "move-2", { runAt: new Date(later).toISOString() }),
    ).rejects.toBeInstanceOf(Crash);
    // Assess
    await movedOnce("move-2", tenant, later);
  });
});

describe("a crash inside a rebuild loses nothing and runs nothing twice", () => {
  /** Redis lost this deployment's keys (only this test file's prefix, on the shared server). */
  async function loseIndex() {
    const redis = hg.redis as import("ioredis").Redis;
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `{${hg.config.keyPrefix}:*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  }

  for (const [method, when] of [
    ["startRebuild", "before"],
    ["startRebuild", "after"],
    ["restore", "before"],
    ["restore", "after"],
    ["finishRebuild", "before"],
    ["finishRebuild", "after"],
  ] as const) {
    const step = {
      startRebuild: "starting the rebuild (its cursor and epoch)",
      restore: "restoring a page",
      finishRebuild: "marking the shard complete",
    }[method];
    it(`rebuild: ${when} ${step}`, async () => {
      // Prepare: three events due now, in the journal only. Their direct sends go to a captured
      // transport (never delivered), and Redis then loses the index: only the rebuild can bring
      // them back. Due now, so they are claimed while the rebuild is still going on.
      const tenant = `crash${tenantCount++}`;
      const ids = [0, 1, 2].map((i) => `rebuild-${method}-${when}-${i}`);
      const { service } = engine(hg, { transport: captured().transport });
      await service.scheduleBatch(
        tenant,
        ids.map((id) => ({ id, type: "test.record", payload: {}, delaySeconds: 0 })),
      );
      await loseIndex();
      // Act: a dispatcher dies at this step of the rebuild.
      const { dispatcher } = engine(hg, {
        transport: captured().transport,
        index: crashOn(hg.index, method, when),
      });
      const report = await dispatcher.tick(500);
      // Assess: a fresh process finishes the rebuild, and each event runs exactly once.
      expect(report.failedShards.length).toBeGreaterThan(0);
      for (const id of ids) {
        await survives(id, tenant);
        expect(rec.runsOf(id)).toHaveLength(1);
      }
    });
  }
});
