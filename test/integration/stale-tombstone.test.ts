import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Crash, crashOn, engine, freshTenant } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Issue 33, finding 5: a cancel of an id the index does not hold leaves an unconfirmed tombstone
 * before its journal write. When that write never happens (here the process dies before it), the
 * tombstone stayed for good, and a create of that id later was answered 201 "scheduled", kept out
 * of the index by it, and then cancelled by the recovery sweep.
 */
const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass({ HOURGLASS_RECOVERY_GRACE_SECONDS: "1" }, { handlers: [rec.handler] });
  // A tick marks every shard's index as known (its epoch), as a running system has.
  await hg.dispatcher.tick(500);
});

afterAll(async () => {
  await hg?.destroy();
});

/** A cancel of `id`, at `at`, by a process that dies before its journal write. */
async function failedCancel(tenant: string, id: string, at: number) {
  const { service } = engine(hg, {
    journal: crashOn(hg.journal!, "markCancelled", "before"),
    clock: () => at,
  });
  await expect(service.cancel(tenant, id)).rejects.toBeInstanceOf(Crash);
}

describe("a cancel's tombstone left by a failed journal write", () => {
  it("does not cancel an event created under that id long after: indexed, and the sweep leaves it scheduled", async () => {
    const tenant = freshTenant("tomb");
    await failedCancel(tenant, "late", Date.now() - 20 * 60_000);
    const created = await hg.events.schedule(tenant, {
      id: "late",
      type: "test.record",
      payload: {},
      runAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(created.outcome).toBe("created");
    expect(created.event.status).toBe("scheduled");
    expect(await hg.index.inspect(`${tenant}/late`)).toBeDefined();
    await hg.dispatcher.recover();
    expect((await hg.journal!.get(tenant, "late"))?.status).toBe("scheduled");
    expect((await hg.events.get(tenant, "late")).status).toBe("scheduled");
  });

  it("an event whose create died before its index write, long after the failed cancel, is restored by the sweep, not cancelled", async () => {
    const tenant = freshTenant("tomb");
    await failedCancel(tenant, "crashed", Date.now() - 20 * 60_000);
    const { service } = engine(hg, { index: crashOn(hg.index, "schedule", "before") });
    await expect(
      service.schedule(tenant, {
        id: "crashed",
        type: "test.record",
        payload: {},
        runAt: new Date(Date.now() - 5_000).toISOString(),
      }),
    ).rejects.toBeInstanceOf(Crash);
    await hg.dispatcher.recover();
    expect((await hg.journal!.get(tenant, "crashed"))?.status).toBe("scheduled");
    expect(await hg.index.inspect(`${tenant}/crashed`)).toBeDefined();
  });

  it("a cancel that may still land (its tombstone is recent) wins at once: the create answers cancelled, never scheduled-then-cancelled", async () => {
    const tenant = freshTenant("tomb");
    await failedCancel(tenant, "recent", Date.now() - 1_000);
    const created = await hg.events.schedule(tenant, {
      id: "recent",
      type: "test.record",
      payload: {},
      runAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(created.event.status).toBe("cancelled");
    expect((await hg.journal!.get(tenant, "recent"))?.status).toBe("cancelled");
    expect(await hg.index.inspect(`${tenant}/recent`)).toBeUndefined();
  });
});
