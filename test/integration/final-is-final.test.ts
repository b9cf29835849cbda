import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import { Dispatcher } from "../../shared/events/dispatcher.ts";
import { restoreEntryOf } from "../../shared/events/entries.ts";
import type { EventJournal } from "../../shared/journal/journal.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { captured, engine } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 8 (final is final) against every way back into the index, and invariant 1 against an
 * index that lost a write the journal has. Each test has its own tenant.
 */
const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler] });
  for (let shard = 0; shard < hg.config.shards; shard++) await hg.index.setEpoch(shard, "1");
});
afterAll(async () => {
  await hg.destroy();
});

/** A dispatcher whose clock runs `aheadMs` ahead, and what it sends. */
function dispatcherAhead(aheadMs: number) {
  const { messages, transport } = captured();
  const dispatcher = new Dispatcher(
    engine(hg, { transport, clock: () => Date.now() + aheadMs }).deps,
    undefined,
  );
  return { messages, dispatcher };
}

describe("cancel is final against every restore path", () => {
  it("a restore from a journal read taken before the cancel does not bring the event back", async () => {
    const tenant = "final-restore";
    await hg.events.schedule(tenant, { id: "c", type: "test.record", payload: {}, delaySeconds: 600 });
    // A recovery sweep, a rebuild or a repeated create read the item while it was pending...
    const stale = (await hg.journal!.get(tenant, "c"))!;
    await hg.events.cancel(tenant, "c");
    // ...and applies it after the cancel.
    expect(await hg.index.restore([restoreEntryOf(stale)], Date.now())).toEqual([ScriptCode.TOMBSTONED]);
    expect(await hg.index.inspect(memberOf(tenant, "c"))).toBeUndefined();
    const { messages, dispatcher } = dispatcherAhead(700_000);
    await dispatcher.tick(1_000);
    expect(messages.filter((m) => m.member.startsWith(`${tenant}/`))).toEqual([]);
  });

  it("a repeated create racing a cancel does not bring the event back", async () => {
    const tenant = "final-repeat";
    const input = { id: "r", type: "test.record", payload: {}, delaySeconds: 600 };
    await hg.events.schedule(tenant, input);
    // The repeat reads the existing (pending) item; the cancel lands before it restores.
    const journal = new Proxy(hg.journal!, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === "create") {
          return async (...args: Parameters<EventJournal["create"]>) => {
            const result = await target.create(...args);
            await hg.events.cancel(tenant, "r");
            return result;
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await engine(hg, { journal }).service.schedule(tenant, input);
    expect(await hg.index.inspect(memberOf(tenant, "r"))).toBeUndefined();
    expect((await hg.events.get(tenant, "r")).status).toBe("cancelled");
  });

  it("a cancel that crashed before its journal write is finished by the recovery sweep, not undone", async () => {
    const tenant = "final-crashed-cancel";
    await hg.events.schedule(tenant, { id: "x", type: "test.record", payload: {}, delaySeconds: 600 });
    // The index part of a cancel, then the process died: the journal still says scheduled.
    await hg.index.cancel(memberOf(tenant, "x"), Date.now());
    // Far enough ahead that the event is overdue past the recovery grace.
    const { messages, dispatcher } = dispatcherAhead(600_000 + hg.config.recovery.graceMs + 60_000);
    await dispatcher.recover();
    expect(await hg.index.inspect(memberOf(tenant, "x"))).toBeUndefined();
    expect((await hg.journal!.get(tenant, "x"))?.status).toBe("cancelled");
    await dispatcher.tick(1_000);
    expect(messages.filter((m) => m.member.startsWith(`${tenant}/`))).toEqual([]);
  });
});

describe("the dispatcher checks the journal for every claimed event", () => {
  it("drops a first claim the journal says finished or cancelled, instead of sending it", async () => {
    const tenant = "final-claim-check";
    await hg.events.scheduleBatch(
      tenant,
      ["done", "gone"].map((id) => ({ id, type: "test.record", payload: {}, delaySeconds: 600 })),
    );
    const stale = await Promise.all(["done", "gone"].map((id) => hg.journal!.get(tenant, id)));
    await hg.journal!.markSucceeded(tenant, "done", 1, Date.now());
    await hg.events.cancel(tenant, "gone");
    // Both come back into the index from reads that predate the journal writes (a replay passes
    // the tombstone, so this reaches the claim however the entry got there).
    for (const item of stale) await hg.index.forget(memberOf(tenant, item!.id), "succeeded");
    await hg.index.restore(
      stale.map((item) => restoreEntryOf(item!)),
      Date.now(),
      { replay: true },
    );
    const { messages, dispatcher } = dispatcherAhead(700_000);
    const report = await dispatcher.tick(1_000);
    expect(messages.filter((m) => m.member.startsWith(`${tenant}/`))).toEqual([]);
    expect(report.forgotten).toBeGreaterThanOrEqual(2);
    expect(await hg.index.inspect(memberOf(tenant, "done"))).toBeUndefined();
  });

  it("an index entry with an older runAt than the journal's (a lost write) does not fire early", async () => {
    const tenant = "final-older-index";
    const member = memberOf(tenant, "moved");
    await hg.events.schedule(tenant, { id: "moved", type: "test.record", payload: {}, delaySeconds: 8 });
    const original = (await hg.journal!.get(tenant, "moved"))!.runAt;
    // Still within the near horizon (an hour), so the reschedule leaves the entry in the index.
    const later = original + 600_000;
    await hg.events.reschedule(tenant, "moved", { runAt: new Date(later).toISOString() });
    // A failover to a replica that missed the reschedule: the index is back at the old time.
    const k = hg.index.keys(hg.index.shardOf(member));
    await hg.redis.zadd(k.due, original, member);
    await hg.redis.hdel(k.meta, member);
    expect(await hg.index.inspect(member)).toMatchObject({ runAt: original });

    const { messages, dispatcher } = dispatcherAhead(10_000);
    await dispatcher.tick(1_000);
    expect(messages.filter((m) => m.member === member)).toEqual([]);
    expect(await hg.index.inspect(member)).toMatchObject({ status: "scheduled", runAt: later });
  });
});

describe("reschedule is atomic across index and journal", () => {
  it("two concurrent reschedules leave the same (later) time in the index and the journal", async () => {
    const tenant = "final-concurrent";
    await hg.events.schedule(tenant, { id: "c", type: "test.record", payload: {}, delaySeconds: 600 });
    const first = Date.now() + 1_000_000;
    const second = Date.now() + 2_000_000;
    // The first reschedule's journal write is held until the second one has finished.
    let release: () => void = () => {};
    const held = new Promise<void>((done) => {
      release = done;
    });
    let entered: () => void = () => {};
    const reachedJournal = new Promise<void>((done) => {
      entered = done;
    });
    const journal = new Proxy(hg.journal!, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === "reschedule") {
          return async (...args: Parameters<EventJournal["reschedule"]>) => {
            entered();
            await held;
            return target.reschedule(...args);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const slow = engine(hg, { journal }).service.reschedule(tenant, "c", {
      runAt: new Date(first).toISOString(),
    });
    await reachedJournal;
    await hg.events.reschedule(tenant, "c", { runAt: new Date(second).toISOString() });
    release();
    await slow;
    const [live, item] = await Promise.all([
      hg.index.inspect(memberOf(tenant, "c")),
      hg.journal!.get(tenant, "c"),
    ]);
    expect(item!.runAt).toBe(live!.runAt);
    expect(live!.runAt).toBe(second);
  });
});

describe("end to end", () => {
  it("a cancelled event whose stale copy was restored never runs its handler", async () => {
    const tenant = "final-e2e";
    await hg.events.schedule(tenant, { id: "e", type: "test.record", payload: {}, delaySeconds: 6 });
    const stale = (await hg.journal!.get(tenant, "e"))!;
    await hg.events.cancel(tenant, "e");
    await hg.index.restore([restoreEntryOf(stale)], Date.now());
    await hg.events.schedule(tenant, { id: "after", type: "test.record", payload: {}, delaySeconds: 6 });
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await eventually(async () => (rec.runsOf("after").length > 0 ? true : undefined), 20_000, "after");
    } finally {
      await runtime.stop();
    }
    expect(rec.runsOf("e")).toEqual([]);
  });
});
