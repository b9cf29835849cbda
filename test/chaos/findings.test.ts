import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventNotFoundError } from "../../shared/events/errors.ts";
import { DynamoSigningStateStore } from "../../shared/handlers/signing.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { captured, engine, intercept } from "../support/engine.ts";
import { signal, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { freePort } from "../support/redis-servers.ts";

/**
 * Failures the chaos soak (npm run chaos) found, each as a small deterministic test. A test marked
 * `it.fails` reproduces a bug that is NOT fixed yet: it passes while the bug is there and fails
 * once it is fixed, so whoever fixes it turns it into an ordinary `it` then.
 */
const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass(
    { HOURGLASS_RECOVERY_GRACE_SECONDS: "1", HOURGLASS_RECOVERY_EVERY_SECONDS: "1" },
    { handlers: [rec.handler] },
  );
});

afterAll(async () => {
  await hg?.destroy();
});

/**
 * An engine whose journal reschedule waits before its write until `gate` fires; `reached` fires
 * when it gets there, so a test can run another call in that window.
 */
function stalledReschedule() {
  const gate = signal();
  const reached = signal();
  const parts = engine(hg, {
    journal: intercept(hg.journal!, "reschedule", async (original, ...args) => {
      reached.fire();
      await gate.promise;
      return original(...args);
    }),
  });
  return { parts, gate, reached };
}

describe("chaos findings", () => {
  // Soak seed 1 (short profile, 30 s of load), event e-5: a create was slow under load; a cancel of
  // the same id sent meanwhile answered 404; the create then answered 201 (and a repeat 200), and
  // the event ended "cancelled" without running. The 404 cancel left an unconfirmed tombstone in
  // Redis (cancel.lua writes one when the index lacks the member, and never prunes it); when the
  // recovery sweep later re-read the still-pending journal item, restore.lua refused it for that
  // tombstone and the sweep marked the journal cancelled. A cancel that answered "no such event"
  // thus cancels any later create of the id that ever goes through a restore (the recovery sweep
  // or the rebuild after a Redis data loss): invariant 2 broken for an event answered 201.
  it("a cancel answered 404 does not cancel a later create of the same id", async () => {
    const tenant = "chaos-404-cancel";
    await expect(hg.events.cancel(tenant, "late")).rejects.toBeInstanceOf(EventNotFoundError);
    const created = await hg.events.schedule(tenant, {
      id: "late",
      type: "test.record",
      payload: {},
      // Overdue by more than the recovery grace, as an event delayed by a lost message would be.
      runAt: new Date(Date.now() - 5_000).toISOString(),
    });
    expect(created.outcome).toBe("created");
    await hg.dispatcher.recover();
    expect((await hg.events.get(tenant, "late")).status).not.toBe("cancelled");
  });

  // Soak seed 6 (short profile, during dynamodb-restart), events e-22, e-96, e-101: no request
  // reached the receiver on attempt 1, yet the attempt was spent. The webhook handler reads the
  // tenant's signing state from DynamoDB inside its run, so while DynamoDB is unreachable the read
  // fails and the worker counts it as the handler's failure, with backoff, until the event is
  // dead: a receiver that accepts every request ends with a dead letter and no request at all.
  // Here the signing store's DynamoDB is a port nothing listens on (the rest of the engine keeps
  // its DynamoDB), and the receiver is healthy.
  it("DynamoDB unreachable while signing does not spend a webhook's attempts", async () => {
    let requests = 0;
    const receiver = createServer((_req, res) => {
      requests++;
      res.writeHead(200).end();
    });
    await new Promise<void>((done) => receiver.listen(0, "127.0.0.1", done));
    const own = await testHourglass({
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true",
      HOURGLASS_MAX_ATTEMPTS: "3",
      HOURGLASS_BACKOFF_BASE_MS: "10",
      HOURGLASS_BACKOFF_MAX_MS: "100",
    });
    const down = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
    (own.signing as unknown as { store: DynamoSigningStateStore }).store = new DynamoSigningStateStore(
      down,
      own.config.tables.leases,
    );
    const runtime = startRuntime(own, { tickMs: 100 });
    try {
      const tenant = "chaos-signing-down";
      await own.events.schedule(tenant, {
        id: "hook",
        type: "webhook",
        payload: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` },
        runAt: new Date().toISOString(),
      });
      // Three attempts with 10–100 ms backoff are spent within this window when the bug is there.
      await new Promise((done) => setTimeout(done, 4_000));
      const event = await own.events.get(tenant, "hook");
      expect({ status: event.status, requests }).not.toEqual({ status: "dead", requests: 0 });
      // Retried with backoff, every attempt given back: the outage spent none of the three (one
      // may be counted while it runs), and the journal says why.
      expect(["retrying", "dispatched", "running"]).toContain(event.status);
      expect(event.attempts).toBeLessThanOrEqual(1);
      const journal = await own.journal!.load(tenant, "hook");
      expect(journal?.attempts).toBe(0);
      expect(journal?.lastError).toContain("DependencyUnavailableError");
    } finally {
      await runtime.stop();
      down.destroy();
      await own.destroy();
      receiver.close();
    }
  });

  // Soak seed 11 (short profile), event e-0: a cancel sent while the create was in flight answered
  // 200 "cancelled", and the event ran 1.5 s later. The create writes the journal, then the index;
  // a cancel between the two finds no index entry (cancel.lua: tombstone, NOT_FOUND), marks the
  // journal cancelled and answers 200; schedule.lua then indexes the event without looking at the
  // tombstone, and the create dispatches it. Here the cancel runs exactly between the two writes.
  it("a cancel that answers 200 while the create is between its writes: the event never runs", async () => {
    const tenant = "chaos-cancel-race";
    let cancelled = "";
    const { messages, transport } = captured();
    const parts = engine(hg, {
      transport,
      index: intercept(hg.index, "schedule", async (original, ...args) => {
        cancelled = await hg.events.cancel(tenant, "race").then(
          (view) => view.status,
          (error: Error) => error.name,
        );
        return original(...args);
      }),
    });
    await parts.service.schedule(tenant, {
      id: "race",
      type: "test.record",
      payload: {},
      runAt: new Date(Date.now() + 200).toISOString(),
    });
    if (messages.length === 0) await parts.dispatcher.tick(1_000);
    for (const message of messages.splice(0)) await parts.worker.process(message);
    const runs = rec.runsOf("race").length;
    // Either answer may be right (200 and no run, or 404/409 and a run); 200 and a run is not.
    expect({ cancelled, runs }).not.toEqual({ cancelled: "cancelled", runs: 1 });
  });

  // Soak seeds 7 and 12, events e-388, e-1285 and e-3008: a reschedule sent while the create (single
  // or batch) was in flight answered 200 with a later runAt, and the event ran at the create's
  // earlier time. The create wrote the journal; the reschedule found no index entry, moved the
  // journal (version 1) and restored the entry at its time; the create's schedule.lua then found
  // that entry (EXISTS) and its "stale entry under a reused id" branch replaced it with the
  // create's own runAt, due within the look-ahead, so the create sent it straight to the queue.
  // Here the whole reschedule runs after the create's journal write and before its index write.
  // To a far time (beyond the near horizon) the reschedule's restore writes nothing, so the create
  // finds no entry at all and dispatched it at once, ~2 h early: the create reads the journal
  // before any direct send of an event whose id a client chose (the same holds when a FLUSHALL,
  // or the racing reschedule's own run, took the entry out before the create's index write).
  for (const [batch, far, lost] of [
    [false, false, false],
    [true, false, false],
    [false, true, false],
    [true, true, false],
    [false, false, true],
  ] as const) {
    it(`a reschedule${far ? " to a far time" : ""}${lost ? " whose entry is then lost" : ""} between a ${batch ? "batch " : ""}create's two writes is not undone by it`, async () => {
      const tenant = `chaos-reschedule-race${batch ? "-batch" : ""}${far ? "-far" : ""}${lost ? "-lost" : ""}`;
      const id = batch ? "moved-in-batch" : "moved";
      const later = Date.now() + (far ? 2 * 3_600_000 : 60_000);
      let answered: number | undefined;
      const { messages, transport } = captured();
      const parts = engine(hg, {
        transport,
        journal: intercept(hg.journal!, batch ? "createMany" : "create", async (original, ...args) => {
          const created = await original(...args);
          const view = await hg.events.reschedule(tenant, id, { runAt: new Date(later).toISOString() });
          answered = view.runAt;
          // The near entry the reschedule restored is lost before the create's index write, as a
          // FLUSHALL (or the rescheduled event's own run, acked away) would take it.
          if (lost) await hg.index.forget(`${tenant}/${id}`, undefined);
          return created;
        }),
      });
      const input = {
        id,
        type: "test.record",
        payload: {},
        runAt: new Date(Date.now() + 200).toISOString(),
      };
      const [created] = batch
        ? await parts.service.scheduleBatch(tenant, [input, { ...input, id: "beside" }])
        : [await parts.service.schedule(tenant, input)];
      expect(answered).toBe(later);
      // The create answers 201 with the event as the journal has it, rescheduled, not its own time.
      expect(created).toMatchObject({ outcome: "created", event: { runAt: later } });
      const live = await hg.index.inspect(`${tenant}/${id}`);
      // A far event leaves the index, for the loader to promote later.
      if (far) expect(live).toBeUndefined();
      else expect(live?.runAt).toBe(later);
      await parts.dispatcher.tick(1_000);
      for (const message of messages.splice(0)) await parts.worker.process(message);
      expect(rec.runsOf(id)).toHaveLength(0);
      expect((await hg.events.get(tenant, id)).runAt).toBe(later);
    });
  }

  // Review of finding 6: the index is written before the journal, so it may be ahead. R1 runs
  // whole between the create's two writes (journal and index at v1/T1); R2 moves the index to
  // v2/T2 and stalls before its journal write; the create then finds the entry (EXISTS) and its
  // settle read the journal at v1: a mismatch, so it restored v1/T1, and the dispatcher, whose
  // journal check still read v1, ran it at T1 while R2 answered 200 with T2.
  it("a create's settle does not undo a reschedule whose index write is ahead of its journal write", async () => {
    const tenant = "chaos-reschedule-index-ahead";
    const id = "ahead";
    const soon = Date.now() + 300;
    const later = Date.now() + 60_000;
    const { parts: stalled, gate, reached: atJournal } = stalledReschedule();
    let second: Promise<{ runAt: number }> | undefined;
    const { messages, transport } = captured();
    const parts = engine(hg, {
      transport,
      journal: intercept(hg.journal!, "create", async (original, ...args) => {
        const created = await original(...args);
        await hg.events.reschedule(tenant, id, { runAt: new Date(soon).toISOString() });
        second = stalled.service.reschedule(tenant, id, { runAt: new Date(later).toISOString() });
        await atJournal.promise;
        return created;
      }),
    });
    await parts.service.schedule(tenant, {
      id,
      type: "test.record",
      payload: {},
      runAt: new Date(Date.now() + 200).toISOString(),
    });
    await new Promise((done) => setTimeout(done, Math.max(0, soon - Date.now())));
    await parts.dispatcher.tick(1_000);
    for (const message of messages.splice(0)) await parts.worker.process(message);
    gate.fire();
    expect((await second)?.runAt).toBe(later);
    expect(rec.runsOf(id)).toHaveLength(0);
    expect((await hg.index.inspect(`${tenant}/${id}`))?.runAt).toBe(later);
    expect((await hg.journal!.get(tenant, id))?.runAt).toBe(later);
  });

  // The other order of the same race: the reschedule finds no index entry, then the create indexes
  // its event (due within the look-ahead, so leased and sent at once), then the reschedule moves
  // the journal and restores: restore.lua finds the create's entry dispatched, and left it, so the
  // create's message ran at the old time after the reschedule had answered 200 with the new one.
  for (const far of [false, true]) {
    it(`a create indexed while a reschedule is between its index and journal writes runs at the new ${far ? "far " : ""}time`, async () => {
      const tenant = `chaos-reschedule-race-other-order${far ? "-far" : ""}`;
      // A far time (beyond the near horizon) leaves the index, for the loader to promote later.
      const later = Date.now() + (far ? 2 * 3_600_000 : 60_000);
      const { parts: rescheduler, gate, reached: atJournal } = stalledReschedule();
      let rescheduled: Promise<unknown> | undefined;
      const { messages, transport } = captured();
      const parts = engine(hg, {
        transport,
        journal: intercept(hg.journal!, "create", async (original, ...args) => {
          const created = await original(...args);
          rescheduled = rescheduler.service.reschedule(tenant, "moved-other-order", {
            runAt: new Date(later).toISOString(),
          });
          await atJournal.promise;
          return created;
        }),
      });
      await parts.service.schedule(tenant, {
        id: "moved-other-order",
        type: "test.record",
        payload: {},
        runAt: new Date(Date.now() + 200).toISOString(),
      });
      gate.fire();
      await rescheduled;
      const live = await hg.index.inspect(`${tenant}/moved-other-order`);
      if (far) expect(live).toBeUndefined();
      else expect(live?.runAt).toBe(later);
      expect((await hg.journal!.get(tenant, "moved-other-order"))?.runAt).toBe(later);
      await parts.dispatcher.tick(1_000);
      for (const message of messages.splice(0)) await parts.worker.process(message);
      expect(rec.runsOf("moved-other-order")).toHaveLength(0);
    });
  }
});
