import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { JournalConditionError } from "../../shared/journal/errors.ts";
import { EventJournal } from "../../shared/journal/journal.ts";
import { freshTenant } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * The journal orders each item's stamps itself (shared/journal/stamps.ts): a writer whose clock is
 * behind never stamps an item earlier than its last write, and a death comes strictly after every
 * earlier write, so the index can compare a death with a replay across clocks (revive.lua).
 */
const rec = recorder();
let hg: TestHourglass;
/** The test's journal, on a client that counts its writes. */
let journal: EventJournal;
let writes = 0;

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler] });
  const client = createDynamoClient();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "UpdateItemCommand") writes++;
      return next(args);
    },
    { step: "build", name: "countWrites" },
  );
  journal = new EventJournal(client, hg.config.tables.events, hg.config.retentionSeconds);
});

afterAll(async () => {
  await hg.destroy();
});

/** A pending event far ahead, so nothing but the test writes it; returns its creation stamp. */
async function pending(tenant: string, id: string): Promise<number> {
  await hg.events.schedule(tenant, { id, type: "test.record", payload: {}, delaySeconds: 600 });
  return (await journal.get(tenant, id))!.updatedAt;
}

describe("journal stamps across clocks", () => {
  it("a writer 10 s behind stamps at the item's last stamp, a death just after it, a replay not before it", async () => {
    const tenant = freshTenant("stamps");
    const created = await pending(tenant, "e");
    const late = created + 10_000;
    writes = 0;
    // An API 10 s ahead moves it; then every other writer's clock is the true one, behind it.
    expect((await journal.reschedule(tenant, "e", created + 1_000, late)).updatedAt).toBe(late);
    const retried = await journal.markRetrying(tenant, "e", 1, "boom", created + 500, created);
    expect(retried.updatedAt).toBe(late);
    // Only the stamp moves: the retry's time is the writer's.
    expect(retried.runAt).toBe(created + 500);
    const dead = await journal.markDead(tenant, "e", 2, "boom", created);
    expect([dead.updatedAt, dead.finishedAt]).toEqual([late + 1, late + 1]);
    expect(dead.dkey).toBe(`${String(late + 1).padStart(15, "0")}#e`);
    expect(dead.ttl).toBe(Math.floor((late + 1) / 1000) + hg.config.retentionSeconds);
    const replayed = await journal.replay(tenant, "e", created, hg.index.shardOf(`${tenant}/e`), created);
    expect(replayed.updatedAt).toBe(late + 1);
    expect(replayed.runAt).toBe(created);
    // One write each ahead of the item, two each behind it: the reschedule, then the other three.
    expect(writes).toBe(1 + 2 + 2 + 2);
  });

  it("a writer ahead of the item's last stamp stamps at its own clock, in one write", async () => {
    const tenant = freshTenant("stamps");
    const created = await pending(tenant, "a");
    writes = 0;
    const dead = await journal.markDead(tenant, "a", 1, "boom", created + 2_000);
    expect(dead.finishedAt).toBe(created + 2_000);
    expect(writes).toBe(1);
  });

  it("a refusal for the write's own condition stands, whatever the stamps, with the item as it is", async () => {
    const tenant = freshTenant("stamps");
    const created = await pending(tenant, "r");
    await journal.markDead(tenant, "r", 1, "boom", created + 5_000);
    // Behind the death's stamp, and not pending: refused for being dead, not retried into a write.
    const refusal = await journal.markSucceeded(tenant, "r", 1, created).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(JournalConditionError);
    expect((refusal as JournalConditionError).existing?.status).toBe("dead");
    const item = (await journal.get(tenant, "r"))!;
    expect([item.status, item.updatedAt]).toEqual(["dead", created + 5_000]);
    await expect(journal.markDead(tenant, "missing", 1, "boom", created)).rejects.toMatchObject({
      existing: undefined,
    });
  });

  it("concurrent writers on skewed clocks: a death is stamped after every stamp written before it", async () => {
    const tenant = freshTenant("stamps");
    const created = await pending(tenant, "c");
    const clocks = [7_000, -3_000, 2_000, 0, 5_000, -1_000, 9_000, 1_000];
    const retries = await Promise.all(
      clocks.map((skew, i) =>
        journal.markRetrying(tenant, "c", i + 1, "boom", created + 60_000, created + skew),
      ),
    );
    const latest = Math.max(...retries.map((item) => item.updatedAt));
    expect(latest).toBe(created + 9_000);
    const dead = await journal.markDead(tenant, "c", 9, "boom", created - 3_000);
    expect(dead.finishedAt).toBe(latest + 1);
  });
});
