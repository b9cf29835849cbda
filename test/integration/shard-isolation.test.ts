import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberOf } from "../../shared/engine/keys.ts";
import type { RedisIndex } from "../../shared/engine/redis-index.ts";
import type { EngineDeps } from "../../shared/events/deps.ts";
import { Dispatcher } from "../../shared/events/dispatcher.ts";
import { silentLogger } from "../../shared/logger.ts";
import type { Transport } from "../../shared/transport/transport.ts";
import { captured } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Invariant 7: an entry the engine cannot read is set aside, and one failing shard never stops
 * another shard, nor the recovery sweep.
 */
const rec = recorder();
let hg: TestHourglass;

beforeAll(async () => {
  hg = await testHourglass(
    { HOURGLASS_RECOVERY_GRACE_SECONDS: "1", HOURGLASS_RECOVERY_EVERY_SECONDS: "1" },
    { handlers: [rec.handler] },
  );
  for (let shard = 0; shard < hg.config.shards; shard++) await hg.index.setEpoch(shard, "1");
});
afterAll(async () => {
  await hg.destroy();
});

function dispatcherWith(index: RedisIndex, transport: Transport, clock = Date.now) {
  const deps: EngineDeps = {
    config: hg.config,
    index,
    journal: hg.journal,
    registry: hg.registry,
    logger: silentLogger,
    clock,
    transport,
  };
  return new Dispatcher(deps, undefined);
}

/** Ids of `tenant` that land on `shard`, first `count` of them. */
function idsOn(tenant: string, shard: number, count: number, prefix = "e"): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    if (hg.index.shardOf(memberOf(tenant, `${prefix}${i}`)) === shard) ids.push(`${prefix}${i}`);
  }
  return ids;
}

describe("an unreadable index entry", () => {
  it("is quarantined by the claim instead of failing it, and the shard's other due events still go out", async () => {
    const tenant = "quarantine1";
    const [bad, ...good] = idsOn(tenant, 1, 4);
    await hg.events.scheduleBatch(
      tenant,
      [bad!, ...good].map((id) => ({ id, type: "test.record", payload: {}, delaySeconds: 600 })),
    );
    const k = hg.index.keys(1);
    const due = Date.now() - 1_000;
    for (const id of [bad!, ...good]) await hg.redis.zadd(k.due, due, memberOf(tenant, id));
    // Meta no version of the scripts could have written.
    await hg.redis.hset(k.meta, memberOf(tenant, bad!), "scheduled|x|1|garbage");

    const claimed = await hg.index.claim(1, Date.now(), Date.now(), 100, 60_000);
    expect(claimed.epochMissing).toBe(false);
    if (claimed.epochMissing) return;
    expect(claimed.quarantined).toEqual([memberOf(tenant, bad!)]);
    expect(claimed.claimed.map((c) => c.member).sort()).toEqual(
      good.map((id) => memberOf(tenant, id)).sort(),
    );

    // Set aside: out of the sorted sets, kept for inspection, visible in stats.
    expect(await hg.redis.zscore(k.due, memberOf(tenant, bad!))).toBeNull();
    expect(await hg.redis.hget(k.quarantine, memberOf(tenant, bad!))).toContain("garbage");
    expect((await hg.index.shardStats(1)).quarantined).toBeGreaterThanOrEqual(1);
    expect((await hg.events.stats(tenant)).byStatus).toMatchObject({ quarantined: 1 });
    expect((await hg.dispatcher.indexHealth()).quarantined).toBeGreaterThanOrEqual(1);

    // The journal still has it: the recovery sweep (once it is overdue) or a rebuild re-indexes it,
    // readable, and it leaves the quarantine.
    await hg.dispatcher.rebuild(1);
    expect(await hg.index.inspect(memberOf(tenant, bad!))).toMatchObject({ status: "scheduled" });
    expect(await hg.redis.hget(k.quarantine, memberOf(tenant, bad!))).toBeNull();
    expect((await hg.events.stats(tenant)).byStatus.quarantined ?? 0).toBe(0);
  });

  it("start and ack answer STALE for an entry they cannot read, with a full-length reply", async () => {
    const tenant = "quarantine2";
    const [bad] = idsOn(tenant, 2, 1);
    const member = memberOf(tenant, bad!);
    await hg.events.schedule(tenant, { id: bad!, type: "test.record", payload: {}, delaySeconds: 600 });
    await hg.redis.hset(hg.index.keys(2).meta, member, "dispatched|1|1|");
    const message = { member, shard: 2, gen: 1, runAt: 0, attempt: 0 };
    const other = { member: memberOf(tenant, "absent"), shard: 2, gen: 1, runAt: 0, attempt: 0 };
    const started = await hg.index.startMany([message, other], Date.now(), 60_000);
    expect(started).toEqual([{ code: 5, status: "unreadable" }, { code: 4 }]);
    expect(await hg.index.ackMany([message, other])).toEqual([
      { code: 5, status: "unreadable" },
      { code: 4 },
    ]);
  });
});

describe("one failing shard", () => {
  it("does not stop the other shards' dispatch, nor the recovery sweep", async () => {
    const tenant = "isolation1";
    const onBroken = idsOn(tenant, 0, 2, "broken");
    const onOthers = [1, 2, 3].flatMap((shard) => idsOn(tenant, shard, 2, `ok${shard}-`));
    // Beyond the look-ahead now; due for a dispatcher whose clock runs 10 s ahead.
    await hg.events.scheduleBatch(
      tenant,
      [...onBroken, ...onOthers].map((id) => ({ id, type: "test.record", payload: {}, delaySeconds: 8 })),
    );
    // And one the index lost (journal only), for the recovery sweep to find.
    const [lostId] = idsOn(tenant, 3, 1, "lost");
    await hg.journal!.create(
      {
        tenant,
        id: lostId!,
        type: "test.record",
        payload: {},
        runAt: Date.now() - 5_000,
        fingerprint: "",
        createdAt: Date.now() - 5_000,
      },
      3,
    );
    await hg.redis.del(`${hg.config.keyPrefix}:recovery-throttle`);

    const broken = new Proxy(hg.index, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === "claim") {
          return async (shard: number, ...rest: unknown[]) => {
            if (shard === 0) throw new Error("shard 0 is broken");
            return (value as (...a: unknown[]) => unknown).call(target, shard, ...rest);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const { messages, transport } = captured();
    const report = await dispatcherWith(broken, transport, () => Date.now() + 10_000).tick(2_000);

    expect(report.failedShards).toEqual([0]);
    const sent = messages.map((m) => m.member);
    for (const id of onOthers) expect(sent).toContain(memberOf(tenant, id));
    for (const id of onBroken) expect(sent).not.toContain(memberOf(tenant, id));
    // Re-indexed by the recovery sweep, or already by the near-horizon loader, whose first sweep of a
    // shard with no watermark yet starts from the beginning of the journal (docs/horizon.md).
    expect(report.restored + (report.promoted ?? 0)).toBeGreaterThanOrEqual(1);
    expect(await hg.index.inspect(memberOf(tenant, lostId!))).toBeDefined();
  });
});
