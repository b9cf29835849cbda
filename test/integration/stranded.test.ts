import { DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import type { StartResult } from "../../shared/engine/redis-index.ts";
import { RESEND_AFTER_MS } from "../../shared/events/send.ts";
import { journalKey } from "../../shared/journal/item.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import type { DispatchMessage } from "../../shared/model/message.ts";
import { startConsumer } from "../support/consumer.ts";
import { Crash, captured, crashOn, engine, failing, freshTenant, intercept } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Issue 8 §3, "nothing is ever stranded": each test pins one way an accepted event could be left
 * where nothing ever picks it up again, or run when it should not. The dispatch lease keeps its
 * local default (30 s), so a test that passes only because a lease ran out cannot pass here.
 */
const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "200",
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
      HOURGLASS_RETENTION_DAYS: "1",
    },
    { handlers: [rec.handler] },
  );
});

afterAll(async () => {
  await hg.destroy();
});

/** The worker side only, with no dispatcher: whatever runs was sent directly. */
function pollerOnly() {
  return startConsumer(hg, { maxInFlight: 100 });
}

const statusIs = (tenant: string, id: string, status: string) => async () => {
  const view = await hg.events.get(tenant, id);
  return view.status === status ? view : undefined;
};

/** Schedules an event through a process that keeps its message, and returns both. */
async function scheduledByHand(tenant: string, input: Record<string, unknown>) {
  const { messages, transport } = captured();
  const { service } = engine(hg, { transport });
  const { event } = await service.schedule(tenant, { type: "test.record", payload: {}, ...input });
  expect(messages).toHaveLength(1);
  return { event, message: messages[0]! };
}

/** Runs an event to the dead letters by hand (a fatal payload, one worker call). */
async function deadByHand(tenant: string, id: string) {
  const { message } = await scheduledByHand(tenant, { id, delaySeconds: 0, payload: { fatal: true } });
  expect((await hg.worker.process(message)).outcome).toBe("dead");
  expect((await hg.index.inspect(`${tenant}/${id}`))?.status).toBe("dead");
}

describe("the worker decides 'early' by Redis time and keeps waiting", () => {
  it("a worker whose clock runs ahead never starts a handler before runAt", async () => {
    const tenant = freshTenant("skew");
    const { event, message } = await scheduledByHand(tenant, { delaySeconds: 1.5 });
    const { worker } = engine(hg, { clock: () => Date.now() + 5_000 });
    expect((await worker.process(message)).outcome).toBe("succeeded");
    const runs = rec.runsOf(event.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.startedAt).toBeGreaterThanOrEqual(event.runAt);
  });

  it("a start that answers EARLY three times in a row still runs the event (not dropped after two)", async () => {
    const tenant = freshTenant("early");
    const { event, message } = await scheduledByHand(tenant, { delaySeconds: 1 });
    let early = 3;
    const index = intercept(hg.index, "startMany", async (original, ...args) => {
      const [messages] = args as [DispatchMessage[]];
      if (early-- > 0) {
        // As timers that fire early under load would see it: not due yet, by Redis's clock.
        return messages.map(
          (m): StartResult => ({ code: ScriptCode.EARLY, runAt: m.runAt, now: Date.now() }),
        );
      }
      return original(...args);
    });
    const { worker } = engine(hg, { index });
    expect((await worker.process(message)).outcome).toBe("succeeded");
    expect(early).toBeLessThan(0);
    expect(rec.runsOf(event.id)).toHaveLength(1);
  });
});

describe("a stale ack", () => {
  it("after the journal says succeeded, a copy re-sent while the handler ran does not run again", async () => {
    const tenant = freshTenant("ack");
    const { event, message } = await scheduledByHand(tenant, { delaySeconds: 0 });
    const member = message.member;
    let resent: DispatchMessage | undefined;
    // While the handler runs, its lease runs out and a dispatcher claims and sends it again; its
    // journal check still sees a pending event. Then the first run records its success.
    const journal = intercept(hg.journal!, "markSucceeded", async (original, ...args) => {
      // A dispatcher tick marks the shard's index complete; none has run in this file yet.
      if (!(await hg.index.hasEpoch(message.shard))) await hg.index.setEpoch(message.shard, "1");
      await hg.redis.zadd(hg.index.keys(message.shard).leased, "XX", 0, member);
      const claim = await hg.index.claim(message.shard, Date.now(), Date.now(), 100, 30_000);
      if (claim.epochMissing) throw new Error("no epoch");
      const again = claim.claimed.find((c) => c.member === member)!;
      const { redelivered: _, ...copy } = again;
      resent = copy;
      return original(...args);
    });
    const { worker } = engine(hg, { journal });
    expect((await worker.process(message)).outcome).toBe("succeeded");
    expect(resent?.gen).toBe(message.gen + 1);

    const second = await hg.worker.process(resent!);
    expect(second.outcome).toBe("dropped");
    expect(rec.runsOf(event.id)).toHaveLength(1);
    expect(await hg.index.inspect(member)).toBeUndefined();
    expect((await hg.events.get(tenant, event.id)).status).toBe("succeeded");
  });
});

describe("replay", () => {
  it("a retried replay after a crash between the journal and the index revives the event (no 409)", async () => {
    const tenant = freshTenant("replay");
    await deadByHand(tenant, "twice");
    const { service } = engine(hg, { index: crashOn(hg.index, "revive", "before") });
    await expect(service.replay(tenant, "twice")).rejects.toBeInstanceOf(Crash);
    expect((await hg.journal!.get(tenant, "twice"))?.status).toBe("scheduled");

    const view = await hg.events.replay(tenant, "twice");
    expect(["scheduled", "dispatched"]).toContain(view.status);
    expect((await hg.index.inspect(`${tenant}/twice`))?.status).not.toBe("dead");
  });
});

describe("retries, replays and failed sends go out soon, without waiting for a dispatcher tick", () => {
  it("a retry due within the look-ahead goes straight to the queue", async () => {
    const tenant = freshTenant("retry");
    const poller = pollerOnly();
    try {
      const { event } = await hg.events.schedule(tenant, {
        type: "test.record",
        delaySeconds: 0,
        payload: { failTimes: 1 },
      });
      // No dispatcher runs here: only the direct send can finish it, so the wait can be long.
      await eventually(statusIs(tenant, event.id, "succeeded"), 30_000, "the retry to run without a tick");
      expect(rec.runsOf(event.id).map((r) => r.attempt)).toEqual([1, 2]);
    } finally {
      await poller.stop();
    }
  });

  it("a replay goes straight to the queue", async () => {
    const tenant = freshTenant("replaynow");
    await deadByHand(tenant, "again");
    const poller = pollerOnly();
    try {
      await hg.events.replay(tenant, "again");
      await eventually(
        async () => (rec.runsOf("again").length >= 2 ? true : undefined),
        30_000,
        "the replay to run without a tick",
      );
    } finally {
      await poller.stop();
    }
  });

  it("a direct send that failed at create is sent again by the next tick, not after the 30 s lease", async () => {
    const tenant = freshTenant("unsent");
    const { service } = engine(hg, { transport: failing() });
    const { event } = await service.schedule(tenant, { type: "test.record", payload: {}, delaySeconds: 0 });
    expect((await hg.events.get(tenant, event.id)).status).toBe("dispatched");
    // The refused send gave its lease back to run out a second after the create, not 30 s after.
    const member = memberOf(tenant, event.id);
    const leased = hg.index.keys(hg.index.shardOf(member)).leased;
    expect(Number(await hg.redis.zscore(leased, member))).toBeLessThanOrEqual(Date.now() + RESEND_AFTER_MS);
    const runtime = startRuntime(hg, { tickMs: 200 });
    try {
      await eventually(statusIs(tenant, event.id, "succeeded"), 30_000, "the failed send to be retried");
    } finally {
      await runtime.stop();
    }
    expect(rec.runsOf(event.id)).toHaveLength(1);
  });
});

describe("id reuse after retention", () => {
  it("a new event under the id of an expired dead letter is indexed and runs", async () => {
    const tenant = freshTenant("reuse");
    await deadByHand(tenant, "reused");
    // DynamoDB's TTL deletes the finished item after HOURGLASS_RETENTION_DAYS.
    await hg.dynamo.send(
      new DeleteCommand({ TableName: hg.config.tables.events, Key: { pk: journalKey(tenant, "reused") } }),
    );
    const { outcome } = await hg.events.schedule(tenant, {
      id: "reused",
      type: "test.record",
      payload: { label: "second life" },
      delaySeconds: 0,
    });
    expect(outcome).toBe("created");
    const runtime = startRuntime(hg, { tickMs: 200 });
    try {
      await eventually(statusIs(tenant, "reused", "succeeded"), 10_000, "the reused id to run");
    } finally {
      await runtime.stop();
    }
    expect(rec.runsOf("reused")).toHaveLength(2);
  });

  it("dead index entries expire with the journal's retention", async () => {
    const tenant = freshTenant("expire");
    await deadByHand(tenant, "old");
    const later = () => Date.now() + hg.config.retentionSeconds * 1000 + 60_000;
    const { dispatcher } = engine(hg, { clock: later });
    await dispatcher.recover();
    expect(await hg.index.inspect(`${tenant}/old`)).toBeUndefined();
    const stats = await hg.events.stats(tenant);
    expect(stats.byStatus.dead ?? 0).toBe(0);
    expect(stats.indexSize).toBe(0);
  });
});
