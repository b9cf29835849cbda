import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";
import { dispatchEvery, startConsumer } from "../support/consumer.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Outcomes that trail their handlers (the local runtime's worker during a backlog) on the real
 * stack: while an outcome waits at the gate, its handler has run, the journal still says pending,
 * its message is still in the queue, and its slot in `maxInFlight` (and in the type's concurrency
 * limit) is free for the next message. Once the gate lets go, every outcome is written and only
 * then is its message deleted. The worker never asks to wait past a point well inside the run
 * lease, so a held outcome cannot let the index send a copy.
 */
const ran: string[] = [];
const handler = defineHandler("test.trail", z.object({}), async (_payload, context) => {
  ran.push(context.id);
});

let hg: TestHourglass;
beforeAll(async () => {
  // One event a message: the deletes counted here are per event (a shared message is deleted
  // once all its events are recorded: test/unit/sqs-batch.test.ts).
  hg = await testHourglass(
    {
      HOURGLASS_HANDLER_TIMEOUT_SECONDS: "30",
      HOURGLASS_RUN_LEASE_MARGIN_MS: "30000",
      HOURGLASS_EVENTS_PER_MESSAGE: "1",
    },
    { handlers: [handler] },
  );
});
afterAll(async () => {
  await hg.destroy();
});

describe("outcomes that trail their handlers", () => {
  it("free the slots while they wait, stay pending in the journal and in the queue, and are written before any delete", async () => {
    const tenant = freshTenant("trail");
    const n = 12;
    const maxInFlight = 3;
    const gate = new TrailingOutcomes({ maxDelayMs: 60_000 });
    const bounds: number[] = [];
    const hold = gate.hold.bind(gate);
    gate.hold = (maxWaitMs) => {
      bounds.push(maxWaitMs);
      return hold(maxWaitMs);
    };
    // A backlog that only the test ends: the consumer's short receives would end it at once.
    const report = gate.backlog.bind(gate);
    report(true);
    gate.backlog = () => {};
    gate.running = () => hg.worker.running;
    hg.worker.trailOutcomes(gate);
    // Two at a time for the type: a held outcome has given its slot back, or this would stall.
    await hg.flow.put(tenant, "test.trail", { maxConcurrency: 2 });

    // Messages flow control parks (two already running) are deleted at once: they are not outcomes.
    let parked = 0;
    const stopDispatching = dispatchEvery(hg);
    const ids = Array.from({ length: n }, (_, i) => `e${i}`);
    await hg.events.scheduleBatch(
      tenant,
      ids.map((id) => ({ id, type: "test.trail", payload: {}, delaySeconds: 1 })),
    );
    const poller = startConsumer(hg, {
      maxInFlight,
      outcomes: gate,
      onResult: (result) => {
        if (result.outcome === "held") parked++;
      },
    });
    try {
      // Four times maxInFlight handlers ran while no outcome was written.
      await eventually(async () => (gate.held === n ? true : undefined), 30_000, "every outcome held");
      expect([...ran].filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
      await new Promise((done) => setTimeout(done, 100)); // the deletes' linger
      expect(poller.deleted).toBe(parked);
      for (const id of ids) {
        expect((await hg.journal!.get(tenant, id))?.status).toBe("scheduled");
      }
      // Within the run lease (30 s + 30 s), leaving at least half its margin for the write.
      expect(bounds).toHaveLength(n);
      for (const bound of bounds) {
        expect(bound).toBeGreaterThan(0);
        expect(bound).toBeLessThanOrEqual(45_000);
      }

      const releasedAt = Date.now();
      report(false);
      await eventually(
        async () => (poller.deleted === n + parked ? true : undefined),
        30_000,
        "every delete",
      );
      for (const id of ids) {
        const item = await hg.journal!.get(tenant, id);
        expect(item?.status).toBe("succeeded");
        // Finished when its handler returned, not when the gate let the write go.
        expect(item?.finishedAt).toBeLessThan(releasedAt);
      }
      expect(gate.held).toBe(0);
      expect(ran.filter((id) => ids.includes(id))).toHaveLength(n); // each ran once
      expect(await hg.redis.zcard(`{${hg.config.keyPrefix}:limits:${tenant}}:slots:test.trail`)).toBe(0);
    } finally {
      report(false);
      await stopDispatching();
      await poller.stop();
    }
  }, 60_000);

  it("are all written when the consumer stops, backlog or not", async () => {
    const tenant = freshTenant("stop");
    const gate = new TrailingOutcomes({ maxDelayMs: 60_000 });
    gate.backlog(true);
    gate.backlog = () => {};
    hg.worker.trailOutcomes(gate);
    await hg.events.scheduleBatch(
      tenant,
      ["a", "b", "c"].map((id) => ({ id, type: "test.trail", payload: {}, delaySeconds: 1 })),
    );
    const poller = startConsumer(hg, { outcomes: gate });
    const stopDispatching = dispatchEvery(hg);
    try {
      await eventually(async () => (gate.held === 3 ? true : undefined), 30_000, "three outcomes held");
    } finally {
      await stopDispatching();
    }
    const stopped = Date.now();
    await poller.stop();
    expect(Date.now() - stopped).toBeLessThan(20_000); // not the gate's 60 s
    for (const id of ["a", "b", "c"]) {
      expect((await hg.journal!.get(tenant, id))?.status).toBe("succeeded");
    }
    expect(poller.deleted).toBe(3);
  }, 60_000);
});
