import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createDynamoClient, createSqsClient } from "../../shared/aws.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { ReservationStateError } from "../../shared/ledger/errors.ts";
import { provision } from "../../shared/local/provision.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { aroundHoldWrite } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { freePort, type RedisServer, startRedisServer } from "../support/redis-servers.ts";

/**
 * Invariant 2 against the loss of whole services: Redis loses all its data, and the SQS emulator
 * restarts empty. This file runs its own redis-server and fauxqs, so breaking them touches no one else.
 */
const rec = recorder();
let redis: RedisServer;
let sqsPort: number;
let sqs: { close(): Promise<unknown> };
let hg: TestHourglass;

async function startSqs() {
  const { buildApp } = await import("fauxqs");
  const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
  await app.listen({ host: "127.0.0.1", port: sqsPort });
  return app;
}

beforeAll(async () => {
  redis = await startRedisServer();
  sqsPort = await freePort();
  sqs = await startSqs();
  process.env.AWS_ENDPOINT_URL_SQS = `http://127.0.0.1:${sqsPort}`;
  hg = await testHourglass(
    {
      HOURGLASS_REDIS_URL: redis.url,
      HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
      // 2 s, not the default 5: "queued" and "waiting" below are then both due within seconds.
      HOURGLASS_LOOKAHEAD_SECONDS: "2",
    },
    { handlers: [rec.handler] },
  );
});

afterAll(async () => {
  await hg?.destroy();
  await sqs?.close();
  await redis?.kill();
});

async function allSucceed(tenant: string, ids: string[]) {
  const runtime = startRuntime(hg, { tickMs: 100 });
  try {
    for (const id of ids) {
      await eventually(
        async () => ((await hg.events.get(tenant, id)).status === "succeeded" ? true : undefined),
        30_000,
        `${id} to succeed`,
      );
    }
  } finally {
    await runtime.stop();
  }
  for (const id of ids) {
    const runs = rec.runsOf(id);
    expect(runs.length, `${id} ran`).toBeGreaterThanOrEqual(1);
    for (const run of runs) expect(run.startedAt, `${id} never early`).toBeGreaterThanOrEqual(run.runAt);
  }
}

describe("losing a whole service loses no event", () => {
  it("Redis FLUSHALL while events are pending, queued and far ahead: every one still fires", async () => {
    const tenant = "flush";
    const now = Date.now();
    const inputs = [
      // Already in the queue with a delay (inside the look-ahead).
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `queued-${i}`,
        runAt: new Date(now + 1_000 + i * 100).toISOString(),
      })),
      // Waiting in the index, beyond the look-ahead.
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `waiting-${i}`,
        runAt: new Date(now + 3_500 + i * 100).toISOString(),
      })),
    ].map((e) => ({ ...e, type: "test.record", payload: {} }));
    await hg.events.scheduleBatch(tenant, inputs);
    // Let one tick mark the epochs, as a running system would have.
    const warmup = startRuntime(hg, { tickMs: 100 });
    await new Promise((done) => setTimeout(done, 300));
    await warmup.stop();

    await hg.redis.flushall();
    expect(await hg.index.inspect(`${tenant}/waiting-0`)).toBeUndefined();

    await allSucceed(
      tenant,
      inputs.map((e) => e.id),
    );
  });

  it("FLUSHALL while events are waiting, queued, running, retrying, cancelled and dead: each ends right, through the rebuild alone", async () => {
    // A recovery grace longer than the test: only the shard rebuild can bring the events back, so
    // this fails if rebuild() restores nothing.
    let release: () => void = () => {};
    const gate = new Promise<void>((done) => {
      release = done;
    });
    let running = false;
    const slow = defineHandler("test.slow", z.object({}), async () => {
      running = true;
      await gate;
    });
    const own = await testHourglass(
      {
        HOURGLASS_REDIS_URL: redis.url,
        HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
        HOURGLASS_RECOVERY_GRACE_SECONDS: "600",
        HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
      },
      { handlers: [rec.handler, slow] },
    );
    const tenant = "flush-states";
    const runtime = startRuntime(own, { tickMs: 100 });
    let restarted: ReturnType<typeof startRuntime> | undefined;
    try {
      const event = (id: string, extra: Record<string, unknown>) =>
        own.events.schedule(tenant, { id, type: "test.record", payload: {}, ...extra });
      await event("dead", { payload: { fatal: true }, delaySeconds: 0 });
      await event("retrying", {
        payload: { failTimes: 1 },
        delaySeconds: 0,
        backoff: { strategy: "fixed", delayMs: 12_000 },
      });
      await own.events.schedule(tenant, { id: "running", type: "test.slow", payload: {}, delaySeconds: 0 });
      await eventually(
        async () =>
          running &&
          (await own.events.get(tenant, "dead")).status === "dead" &&
          (await own.events.get(tenant, "retrying")).attempts === 1
            ? true
            : undefined,
        20_000,
        "dead, retrying and running",
      );
      expect((await own.events.get(tenant, "retrying")).status).toBe("retrying");
      await event("cancelled", { delaySeconds: 3 });
      await own.events.cancel(tenant, "cancelled");
      await event("queued", { delaySeconds: 2 });
      await event("waiting", { delaySeconds: 8 });
      expect((await own.events.get(tenant, "queued")).status).toBe("dispatched");

      await own.redis.flushall();
      release();

      for (const id of ["waiting", "queued", "running", "retrying"]) {
        await eventually(
          async () => ((await own.events.get(tenant, id)).status === "succeeded" ? true : undefined),
          30_000,
          `${id} to succeed`,
        );
      }
      expect(rec.runsOf("waiting")).toHaveLength(1);
      expect(rec.runsOf("queued")).toHaveLength(1);
      expect(rec.runsOf("retrying").map((r) => r.attempt)).toEqual([1, 2]);
      for (const id of ["waiting", "queued", "retrying"]) {
        for (const run of rec.runsOf(id))
          expect(run.startedAt, `${id} never early`).toBeGreaterThanOrEqual(run.runAt);
      }
      expect(rec.runsOf("cancelled")).toEqual([]);
      expect((await own.events.get(tenant, "cancelled")).status).toBe("cancelled");
      expect(rec.runsOf("dead")).toHaveLength(1);
      expect((await own.events.get(tenant, "dead")).status).toBe("dead");
      expect((await own.events.deadLetters(tenant, 10)).events.map((e) => e.id)).toEqual(["dead"]);
      // Still replayable after the loss: it runs (and, fatal again, dies) once more.
      await runtime.stop();
      restarted = startRuntime(own, { tickMs: 100 });
      expect((await own.events.replay(tenant, "dead")).status).not.toBe("dead");
      await eventually(async () => (rec.runsOf("dead").length === 2 ? true : undefined), 20_000, "replay");
    } finally {
      release();
      await runtime.stop();
      await restarted?.stop();
      await own.destroy();
    }
  });

  it("the SQS emulator restarts and loses its messages: every event fires after its lease expires", async () => {
    const tenant = "sqsloss";
    const inputs = Array.from({ length: 10 }, (_, i) => ({
      id: `lost-${i}`,
      type: "test.record",
      payload: {},
      delaySeconds: 1.5,
    }));
    const results = await hg.events.scheduleBatch(tenant, inputs);
    expect(results.every((r) => r.ok)).toBe(true);
    expect((await hg.events.get(tenant, "lost-0")).status).toBe("dispatched");

    await sqs.close();
    sqs = await startSqs();
    // A restarted emulator has no queues either: recreate them as `npm start` does.
    const { provision } = await import("../../shared/local/provision.ts");
    const { createDynamoClient, createSqsClient } = await import("../../shared/aws.ts");
    await provision({
      dynamo: createDynamoClient(),
      sqs: createSqsClient(),
      config: hg.config,
    });

    await allSucceed(
      tenant,
      inputs.map((e) => e.id),
    );
  });

  // Chaos finding 8 (seeds 7, 11, 12): holds answered 201 during an SQS restart and a FLUSHALL were
  // never released. The expiry event is scheduled before the hold is written, and its send failed
  // (SQS down), so the API was still on its way to the hold's write when the FLUSHALL put the
  // event, restored from the journal at its (already near) due time, in the dispatcher's hands; SQS
  // came back, the event ran, found no reservation yet and did nothing, and the hold written next
  // was held for good. Here the hold's write waits until its expiry has run.
  it("a hold whose expiry ran before the hold was written (send failed, then FLUSHALL) never stays held", async () => {
    const tenant = "sendfail";
    const ledger = hg.ledger!;
    await ledger.receive(tenant, "sku", { quantity: 10 });
    let expiryEventId = "";
    const restoreWrite = aroundHoldWrite(ledger, async (write, t, reservation, ...rest) => {
      expiryEventId = reservation.expiryEventId;
      await (hg.redis as Redis).flushall();
      sqs = await startSqs();
      await provision({ dynamo: createDynamoClient(), sqs: createSqsClient(), config: hg.config });
      await eventually(
        async () => ((await hg.journal!.get(t, expiryEventId))?.status === "succeeded" ? true : undefined),
        20_000,
        "the expiry event to run",
      );
      return write(t, reservation, ...rest);
    });
    await sqs.close();
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      // An ordinary event whose direct send fails the same way, for the engine's part: it runs.
      await hg.events.schedule(tenant, { id: "plain", type: "test.record", payload: {}, delaySeconds: 1 });
      const held = await ledger
        .hold(tenant, { id: "r-1", items: [{ sku: "sku", quantity: 2 }], holdSeconds: 1 })
        .then(
          (outcome) => outcome.reservation.status,
          (error: Error) => error,
        );
      // The expiry ran before the hold's write could land: it voided that write, which is refused
      // (409: expired before it was held), and nothing stays held.
      expect(held).toBeInstanceOf(ReservationStateError);
      expect((await ledger.stock(tenant, "sku")).held).toBe(0);
      expect((await ledger.stock(tenant, "sku")).available).toBe(10);
      await eventually(
        async () => ((await hg.events.get(tenant, "plain")).status === "succeeded" ? true : undefined),
        20_000,
        "the ordinary event to run",
      );
      // The void names that attempt only: the client's retry under the same id holds.
      restoreWrite();
      const again = await ledger.hold(tenant, {
        id: "r-1",
        items: [{ sku: "sku", quantity: 2 }],
        holdSeconds: 60,
      });
      expect(again.created).toBe(true);
      expect((await ledger.getReservation(tenant, "r-1")).status).toBe("held");
      await ledger.release(tenant, "r-1", "cancelled");
    } finally {
      await runtime.stop();
      restoreWrite();
    }
  });
});
