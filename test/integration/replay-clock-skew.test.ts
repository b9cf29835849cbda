import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import { EventStateConflictError } from "../../shared/events/errors.ts";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { JournalConditionError } from "../../shared/journal/errors.ts";
import type { JournalItem } from "../../shared/journal/item.ts";
import type { Page } from "../../shared/journal/journal.ts";
import { Crash, captured, crashOn, engine, freshTenant, intercept } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Invariant 8 across clocks (docs/reliability.md, issue 33 finding 4): the worker records a death
 * with its clock and the API stamps a replay with its own. A replay must revive exactly the death
 * it saw, whichever clock runs ahead: never stranded (the journal pending, the index dead), never
 * reviving a later death it never saw.
 */
const SKEW_MS = 3_000;
const ahead = () => Date.now() + SKEW_MS;

/** Runs of each event id; the handler fails for good on the first `dieTimes` runs, then succeeds. */
const runs = new Map<string, number>();
const mortal = defineHandler("test.mortal", z.object({ dieTimes: z.number() }), async (payload, context) => {
  const run = (runs.get(context.id) ?? 0) + 1;
  runs.set(context.id, run);
  if (run <= payload.dieTimes) throw new NonRetryableError(`dies on run ${run}`);
});

let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass({ HOURGLASS_RECOVERY_GRACE_SECONDS: "1" }, { handlers: [mortal] });
});

afterAll(async () => {
  await hg.destroy();
});

/** One role of the engine (API, worker, recovery) with its own clock; what it sends is kept. */
function role(clock: () => number = Date.now) {
  const { messages, transport } = captured();
  return { messages, ...engine(hg, { clock, transport }) };
}

/** Schedules an event due now and runs it on a worker with `workerClock`: it dies. */
async function deadLetter(tenant: string, id: string, dieTimes: number, workerClock: () => number) {
  const api = role();
  await api.service.schedule(tenant, { id, type: "test.mortal", payload: { dieTimes }, delaySeconds: 0 });
  expect(api.messages).toHaveLength(1);
  expect((await role(workerClock).worker.process(api.messages[0]!)).outcome).toBe("dead");
}

/** Replays through an API with `apiClock`, and runs what it sends on a worker with `workerClock`. */
async function replayAndRun(tenant: string, id: string, apiClock: () => number, workerClock: () => number) {
  const api = role(apiClock);
  await api.service.replay(tenant, id);
  expect(api.messages).toHaveLength(1);
  return (await role(workerClock).worker.process(api.messages[0]!)).outcome;
}

/** The status the API answers agrees with the journal's, and is `status`. */
async function agreed(tenant: string, id: string, status: string) {
  expect((await hg.events.get(tenant, id)).status).toBe(status);
  expect((await hg.journal!.get(tenant, id))!.status).toBe(status);
}

describe("a replay across skewed clocks", () => {
  it("the worker's clock 3 s ahead of the API: the replay runs the event, and the status agrees", async () => {
    const tenant = freshTenant("skew-worker");
    await deadLetter(tenant, "w", 1, ahead);
    expect(await replayAndRun(tenant, "w", Date.now, ahead)).toBe("succeeded");
    expect(runs.get("w")).toBe(2);
    await agreed(tenant, "w", "succeeded");
  });

  it("the API's clock 3 s ahead of the worker: the replay runs the event, and the status agrees", async () => {
    const tenant = freshTenant("skew-api");
    await deadLetter(tenant, "a", 1, Date.now);
    expect(await replayAndRun(tenant, "a", ahead, Date.now)).toBe("succeeded");
    expect(runs.get("a")).toBe(2);
    await agreed(tenant, "a", "succeeded");
  });

  it("a crash between the replay's journal and index writes is finished by the recovery sweep", async () => {
    const tenant = freshTenant("skew-crash");
    await deadLetter(tenant, "c", 1, ahead);
    const api = engine(hg, { index: crashOn(hg.index, "revive", "before") });
    await expect(api.service.replay(tenant, "c")).rejects.toBeInstanceOf(Crash);
    expect((await hg.index.inspect(memberOf(tenant, "c")))?.status).toBe("dead");
    // The recovery's clock past the replay's runAt and the grace, as a later sweep sees it.
    const recovery = role(() => Date.now() + 2_000);
    await recovery.dispatcher.recover();
    expect((await hg.index.inspect(memberOf(tenant, "c")))?.status).toBe("scheduled");
    await recovery.dispatcher.tick(1_000);
    const sent = recovery.messages.filter((m) => m.member === memberOf(tenant, "c"));
    expect(sent).toHaveLength(1);
    expect((await role(ahead).worker.process(sent[0]!)).outcome).toBe("succeeded");
    await agreed(tenant, "c", "succeeded");
    // A client's retry of the crashed replay, after the sweep finished it: nothing to finish.
    await expect(hg.events.replay(tenant, "c")).rejects.toBeInstanceOf(EventStateConflictError);
  });
});

describe("a replay based on a stale view does not revive a newer death", () => {
  /**
   * A dead letter replayed, moved to "now" by an API whose clock runs 3 s ahead, then dead again on
   * a worker with the true time: by the clocks, the second death comes before the move. Returns
   * the journal item as a reader saw it between the move and the second death.
   */
  async function diedAfterReplay(tenant: string, id: string): Promise<JournalItem> {
    await deadLetter(tenant, id, 2, Date.now);
    await role().service.replay(tenant, id);
    const mover = role(ahead);
    await mover.service.reschedule(tenant, id, { runAt: new Date().toISOString() });
    expect(mover.messages).toHaveLength(1);
    const stale = (await hg.journal!.get(tenant, id))!;
    expect(stale.status).toBe("scheduled");
    expect((await role().worker.process(mover.messages[0]!)).outcome).toBe("dead");
    expect(runs.get(id)).toBe(2);
    return stale;
  }

  it("the recovery sweep's finishReplays, from a journal page read before the death, leaves it dead", async () => {
    const tenant = freshTenant("stale-sweep");
    const stale = await diedAfterReplay(tenant, "s");
    const journal = intercept(hg.journal!, "pending", async (original, ...args) => {
      const page = (await original(...args)) as Page<JournalItem>;
      const others = page.items.filter((item) => item.pk !== stale.pk);
      return {
        ...page,
        items: args[0] === hg.index.shardOf(memberOf(tenant, "s")) ? [...others, stale] : others,
      };
    });
    const recovery = engine(hg, { journal, clock: () => Date.now() + 2_000 });
    await recovery.dispatcher.recover();
    expect((await hg.index.inspect(memberOf(tenant, "s")))?.status).toBe("dead");
    await agreed(tenant, "s", "dead");
  });

  it("a client's retry of the replay, answered from a stale read, is refused and leaves it dead", async () => {
    const tenant = freshTenant("stale-retry");
    const stale = await diedAfterReplay(tenant, "r");
    // The retry's conditional write found the item pending: the read behind it predates the death.
    const journal = intercept(hg.journal!, "replay", async () => {
      throw new JournalConditionError("replay", stale.pk, stale);
    });
    const api = engine(hg, { journal });
    await expect(api.service.replay(tenant, "r")).rejects.toBeInstanceOf(EventStateConflictError);
    expect((await hg.index.inspect(memberOf(tenant, "r")))?.status).toBe("dead");
    await agreed(tenant, "r", "dead");
  });

  it("the index's revive, given a view older than its death, answers STALE", async () => {
    const tenant = freshTenant("stale-index");
    const stale = await diedAfterReplay(tenant, "i");
    const member = memberOf(tenant, "i");
    const [revived] = await hg.index.reviveMany([
      { member, runAt: stale.runAt, diedBefore: stale.updatedAt },
    ]);
    expect(revived!.code).toBe(ScriptCode.STALE);
  });
});
