import { describe, expect, it } from "vitest";
import { encodeBody } from "../../shared/engine/body.ts";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { REDIS_TIME, type RedisIndex } from "../../shared/engine/redis-index.ts";

/**
 * The behaviour every Lua script promises, run against a real Redis: a single node in one file,
 * a 3-master cluster in another. Time is passed in explicitly, so nothing here waits.
 */
export function indexContract(getIndex: () => RedisIndex, fresh: () => string) {
  const T0 = 1_800_000_000_000;
  const LEASE = 60_000;
  const body = (type = "test.record") => encodeBody({ type }, { inline: { n: 1 } });

  async function ready(index: RedisIndex) {
    for (let shard = 0; shard < index.shards; shard++) await index.setEpoch(shard, "1");
  }

  async function claimShard(index: RedisIndex, shard: number, now: number) {
    const result = await index.claim(shard, now, now, 1_000, LEASE);
    if (result.epochMissing) throw new Error(`shard ${shard} has no epoch`);
    return result.claimed;
  }

  async function claimAll(index: RedisIndex, now: number, until = now, limit = 1_000) {
    const claimed = [];
    for (let shard = 0; shard < index.shards; shard++) {
      const result = await index.claim(shard, now, until, limit, LEASE);
      if (result.epochMissing) throw new Error(`shard ${shard} has no epoch`);
      claimed.push(...result.claimed);
    }
    return claimed;
  }

  describe("Lua scripts", () => {
    it("refuses to claim from a shard whose epoch marker is missing", async () => {
      const index = getIndex();
      const member = `${fresh()}/a`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0 - 60_000, T0 - 60_000, LEASE);
      const shard = index.shardOf(member);
      expect(await index.claim(shard, T0, T0, 10, LEASE)).toEqual({ epochMissing: true });
      await index.setEpoch(shard, "1");
      const claimed = await index.claim(shard, T0, T0, 10, LEASE);
      expect(claimed.epochMissing).toBe(false);
    });

    it("claims only what is due within the window, in due order, up to the limit, and is idempotent to schedule", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const entries = Array.from({ length: 30 }, (_, i) => ({
        member: `${tenant}/e${i}`,
        runAt: T0 + i * 1_000,
        body: body(),
      }));
      const codes = await index.schedule(entries, T0 - 100_000, T0 - 100_000, LEASE);
      expect(codes.every((c) => c === ScriptCode.SCHEDULED)).toBe(true);
      expect(await index.schedule(entries.slice(0, 2), T0, T0, LEASE)).toEqual([
        ScriptCode.EXISTS,
        ScriptCode.EXISTS,
      ]);

      // Due within [.., T0 + 9.5 s]: events 0..9.
      const claimed = (await claimAll(index, T0, T0 + 9_500)).filter((c) =>
        c.member.startsWith(`${tenant}/`),
      );
      expect(claimed.map((c) => c.member).sort()).toEqual(
        entries
          .slice(0, 10)
          .map((e) => e.member)
          .sort(),
      );
      for (const c of claimed) {
        expect(c.gen).toBe(1);
        expect(c.attempt).toBe(0);
        expect(c.redelivered).toBe(false);
      }
      // Nothing is claimed twice while its lease runs.
      expect(
        (await claimAll(index, T0 + 1, T0 + 9_500)).filter((c) => c.member.startsWith(`${tenant}/`)),
      ).toEqual([]);
    });

    it("gates start on gen and time: early, ok once, duplicate, stale", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/x`;
      const [code] = await index.schedule([{ member, runAt: T0 + 500, body: body() }], T0, T0 + 5_000, LEASE);
      expect(code).toBe(ScriptCode.DISPATCHED);
      const message = { member, shard: index.shardOf(member), gen: 1, runAt: T0 + 500, attempt: 0 };
      expect(await index.start(message, T0 + 499, LEASE)).toEqual({
        code: ScriptCode.EARLY,
        runAt: T0 + 500,
        now: T0 + 499,
      });
      expect(await index.start({ ...message, gen: 2 }, T0 + 600, LEASE)).toMatchObject({
        code: ScriptCode.STALE,
      });
      const started = await index.start(message, T0 + 500, LEASE);
      expect(started).toMatchObject({ code: ScriptCode.OK, attempt: 1, body: body() });
      expect(await index.start(message, T0 + 501, LEASE)).toEqual({ code: ScriptCode.DUPLICATE });
      expect(await index.ack(message)).toEqual({ code: ScriptCode.OK });
      expect(await index.start(message, T0 + 502, LEASE)).toEqual({ code: ScriptCode.NOT_FOUND });
      expect(await index.inspect(member)).toBeUndefined();
    });

    it("judges early by the Redis server's clock when the caller asks for REDIS_TIME", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/clock`;
      const runAt = Date.now() + 60_000;
      await index.schedule([{ member, runAt, body: body() }], runAt, runAt, LEASE);
      const message = { member, shard: index.shardOf(member), gen: 1, runAt, attempt: 0 };
      const early = await index.start(message, REDIS_TIME, LEASE);
      expect(early).toMatchObject({ code: ScriptCode.EARLY, runAt });
      const serverNow = (early as { now: number }).now;
      expect(Math.abs(serverNow - Date.now())).toBeLessThan(5_000);
    });

    it("redelivers an expired lease under a new gen, so the old message is stale", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/lost`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const first = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      // The lease runs until T0 + LEASE; a claim just after finds it expired.
      const again = await claimShard(index, first.shard, T0 + LEASE + 1);
      const redelivered = again.find((c) => c.member === member)!;
      expect(redelivered).toMatchObject({ gen: 2, redelivered: true });
      expect(await index.start(first, T0 + LEASE + 2, LEASE)).toMatchObject({ code: ScriptCode.STALE });
      expect(await index.start({ ...first, gen: 2 }, T0 + LEASE + 2, LEASE)).toMatchObject({
        code: ScriptCode.OK,
      });
    });

    it("retries into due, buries into dead, and revives with attempts reset", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/r`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const m1 = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      await index.start(m1, T0, LEASE);
      expect(await index.retry(m1, T0 + 5_000)).toEqual({ code: ScriptCode.OK });
      expect(await index.inspect(member)).toMatchObject({
        status: "retrying",
        attempt: 1,
        runAt: T0 + 5_000,
      });
      const [claimed] = await claimShard(index, m1.shard, T0 + 5_000);
      expect(claimed).toMatchObject({ member, gen: 2, attempt: 1 });
      const m2 = { ...m1, gen: 2, runAt: T0 + 5_000, attempt: 1 };
      expect(await index.start(m2, T0 + 5_000, LEASE)).toMatchObject({ code: ScriptCode.OK, attempt: 2 });
      expect(await index.bury(m2, T0 + 6_000)).toEqual({ code: ScriptCode.OK });
      expect(await index.inspect(member)).toMatchObject({ status: "dead", attempt: 2 });
      expect(await index.cancel(member, T0)).toEqual({ code: ScriptCode.CONFLICT, status: "dead" });
      expect(await index.revive(member, T0 + 7_000)).toEqual({ code: ScriptCode.OK });
      expect(await index.inspect(member)).toMatchObject({
        status: "scheduled",
        attempt: 0,
        runAt: T0 + 7_000,
      });
    });

    it("cancels anything not started, refuses a running event, and makes a queued message find nothing", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const waiting = `${tenant}/waiting`;
      const queued = `${tenant}/queued`;
      const running = `${tenant}/running`;
      await index.schedule([{ member: waiting, runAt: T0 + 100_000, body: body() }], T0, T0, LEASE);
      await index.schedule(
        [
          { member: queued, runAt: T0, body: body() },
          { member: running, runAt: T0, body: body() },
        ],
        T0,
        T0,
        LEASE,
      );
      const runningMessage = {
        member: running,
        shard: index.shardOf(running),
        gen: 1,
        runAt: T0,
        attempt: 0,
      };
      await index.start(runningMessage, T0, LEASE);

      expect(await index.cancel(waiting, T0)).toEqual({ code: ScriptCode.OK, previous: "scheduled" });
      expect(await index.cancel(queued, T0)).toEqual({ code: ScriptCode.OK, previous: "dispatched" });
      expect(await index.cancel(running, T0)).toEqual({ code: ScriptCode.CONFLICT, status: "running" });
      expect(await index.cancel(`${tenant}/never`, T0)).toEqual({ code: ScriptCode.NOT_FOUND });
      const queuedMessage = { member: queued, shard: index.shardOf(queued), gen: 1, runAt: T0, attempt: 0 };
      expect(await index.start(queuedMessage, T0 + 1, LEASE)).toEqual({ code: ScriptCode.NOT_FOUND });
    });

    it("reschedules a dispatched event under a new gen and refuses a running one", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/move`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const old = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      expect(await index.reschedule(member, T0 + 100_000, T0, T0 + 5_000, LEASE)).toEqual({
        code: ScriptCode.SCHEDULED,
        version: 1,
      });
      expect(await index.start(old, T0 + 1, LEASE)).toMatchObject({ code: ScriptCode.STALE });
      expect(await index.reschedule(member, T0 + 2_000, T0, T0 + 5_000, LEASE)).toEqual({
        code: ScriptCode.DISPATCHED,
        attempt: 0,
        gen: 3,
        version: 2,
      });
      await index.start({ ...old, gen: 3, runAt: T0 + 2_000 }, T0 + 2_000, LEASE);
      expect(await index.reschedule(member, T0 + 9_000, T0 + 2_001, T0 + 5_000, LEASE)).toEqual({
        code: ScriptCode.CONFLICT,
        status: "running",
      });
    });

    it("restores only what the index lost, with gens that cannot match older messages", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const kept = `${tenant}/kept`;
      const lost = `${tenant}/lost`;
      await index.schedule([{ member: kept, runAt: T0, body: body() }], T0 - 10_000, T0 - 10_000, LEASE);
      const codes = await index.restore(
        [
          { member: kept, runAt: T0, body: body(), attempt: 0, status: "scheduled", version: 0 },
          { member: lost, runAt: T0, body: body(), attempt: 2, status: "retrying", version: 0 },
        ],
        T0,
      );
      expect(codes).toEqual([ScriptCode.PRESENT, ScriptCode.RESTORED]);
      expect(await index.inspect(lost)).toMatchObject({ status: "retrying", attempt: 2, gen: T0 });
      const claimed = (await claimAll(index, T0, T0)).find((c) => c.member === lost)!;
      expect(claimed.gen).toBe(T0 + 1);
      expect(claimed.attempt).toBe(2);
    });

    it("revives a dead letter only if it died before the journal's replay, and can lease it on the spot", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/dead`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const m1 = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      await index.start(m1, T0, LEASE);
      await index.bury(m1, T0 + 1_000);
      // A journal read older than the death must not bring it back.
      expect(await index.revive(member, T0 + 2_000, { diedBefore: T0 + 999 })).toEqual({
        code: ScriptCode.STALE,
        status: "dead",
      });
      const direct = { now: T0 + 2_000, dispatchUntil: T0 + 7_000, leaseMs: LEASE };
      expect(await index.revive(member, T0 + 2_000, { diedBefore: T0 + 1_000, direct })).toEqual({
        code: ScriptCode.DISPATCHED,
        gen: 2,
      });
      expect(await index.inspect(member)).toMatchObject({ status: "dispatched", attempt: 0, gen: 2 });
      expect(await index.revive(member, T0 + 2_000)).toEqual({
        code: ScriptCode.CONFLICT,
        status: "dispatched",
      });
    });

    it("gives back the lease of an unsent dispatch, and only the dispatch that holds it", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/unsent`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const m1 = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      expect(await index.release([{ ...m1, gen: 7 }], T0 + 1)).toEqual([ScriptCode.STALE]);
      expect(await index.release([m1], T0 + 1)).toEqual([ScriptCode.OK]);
      const [again] = await claimShard(index, m1.shard, T0 + 2);
      expect(again).toMatchObject({ member, gen: 2, redelivered: true });
    });

    it("sends a retry due within the window straight back to the lease, with a new gen", async () => {
      const index = getIndex();
      await ready(index);
      const member = `${fresh()}/soon`;
      await index.schedule([{ member, runAt: T0, body: body() }], T0, T0, LEASE);
      const m1 = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
      await index.start(m1, T0, LEASE);
      const direct = { now: T0 + 10, dispatchUntil: T0 + 5_000, leaseMs: LEASE };
      expect(await index.retry(m1, T0 + 1_000, direct)).toEqual({ code: ScriptCode.DISPATCHED, gen: 2 });
      expect(await index.inspect(member)).toMatchObject({
        status: "dispatched",
        attempt: 1,
        runAt: T0 + 1_000,
      });
    });

    it("expires dead letters older than the cutoff, counters included", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const members = [`${tenant}/old`, `${tenant}/young`];
      await index.schedule(
        members.map((member) => ({ member, runAt: T0, body: body() })),
        T0,
        T0,
        LEASE,
      );
      for (const [i, member] of members.entries()) {
        const m = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
        await index.start(m, T0, LEASE);
        await index.bury(m, T0 + i * 10_000);
      }
      for (let shard = 0; shard < index.shards; shard++) await index.expire(shard, T0 + 5_000, 100);
      expect(await index.inspect(members[0]!)).toBeUndefined();
      expect(await index.inspect(members[1]!)).toMatchObject({ status: "dead" });
      const stats = await Promise.all(Array.from({ length: index.shards }, (_, s) => index.shardStats(s)));
      expect(stats.reduce((sum, s) => sum + (s.counters[`${tenant}|test.record|dead`] ?? 0), 0)).toBe(1);
    });

    it("expires confirmed cancel tombstones older than the cutoff, never unconfirmed ones", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const [old, unconfirmed, young] = [`${tenant}/old`, `${tenant}/unconfirmed`, `${tenant}/young`];
      await index.schedule(
        [old, unconfirmed, young].map((member) => ({ member, runAt: T0 + 600_000, body: body() })),
        T0,
        T0,
        LEASE,
      );
      for (const member of [old, unconfirmed, young]) await index.cancel(member, T0);
      await index.confirmCancel(old, T0);
      await index.confirmCancel(young, T0 + 10_000);
      for (let shard = 0; shard < index.shards; shard++) await index.expire(shard, T0 + 5_000, 100);
      const tombstone = (member: string) =>
        index.client.zscore(index.keys(index.shardOf(member)).cancelled, member);
      expect(await tombstone(old)).toBeNull();
      expect(await tombstone(unconfirmed)).not.toBeNull();
      expect(await tombstone(young)).not.toBeNull();
      const entry = (member: string) => ({
        member,
        runAt: T0,
        body: body(),
        attempt: 0,
        status: "scheduled" as const,
        version: 0,
      });
      expect(await index.restore([entry(old), entry(unconfirmed), entry(young)], T0 + 20_000)).toEqual([
        ScriptCode.RESTORED,
        ScriptCode.TOMBSTONED,
        ScriptCode.TOMBSTONED,
      ]);
    });

    it("revive and a direct retry keep the entry's version, and revive answers CONFLICT for unreadable meta", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const [dead, running, garbled] = [`${tenant}/dead`, `${tenant}/running`, `${tenant}/garbled`];
      await index.schedule(
        [dead, running, garbled].map((member) => ({ member, runAt: T0, body: body() })),
        T0,
        T0,
        LEASE,
      );
      const metaOf = (member: string) => index.client.hget(index.keys(index.shardOf(member)).meta, member);
      for (const member of [dead, running]) {
        const m = { member, shard: index.shardOf(member), gen: 1, runAt: T0, attempt: 0 };
        await index.start(m, T0, LEASE);
        // A version, as a versioned reschedule leaves it (status|attempt|gen|runAt|version).
        await index.client.hset(index.keys(m.shard).meta, member, `running|1|1|${T0}|7`);
        if (member === dead) await index.bury(m, T0 + 1_000);
      }
      await index.client.hset(index.keys(index.shardOf(garbled)).meta, garbled, "dead|x|1|");
      const direct = { now: T0 + 2_000, dispatchUntil: T0 + 60_000, leaseMs: LEASE };

      expect(await index.revive(dead, T0 + 2_000, { direct })).toEqual({
        code: ScriptCode.DISPATCHED,
        gen: 2,
      });
      expect(await metaOf(dead)).toBe(`dispatched|0|2|${T0 + 2_000}|7`);
      expect(await index.revive(garbled, T0 + 2_000, { direct })).toEqual({
        code: ScriptCode.CONFLICT,
        status: "unreadable",
      });

      const m = { member: running, shard: index.shardOf(running), gen: 1, runAt: T0, attempt: 1 };
      expect(await index.retry(m, T0 + 3_000, direct)).toMatchObject({ code: ScriptCode.DISPATCHED, gen: 2 });
      expect(await metaOf(running)).toBe(`dispatched|1|2|${T0 + 3_000}|7`);
    });

    it("keeps a rebuild's cursor beside an epoch that lets claims go on, and clears it when done", async () => {
      const index = getIndex();
      const shard = index.shards - 1;
      await index.client.del(index.keys(shard).epoch);
      await index.startRebuild(shard, T0);
      expect(await index.hasEpoch(shard)).toBe(true);
      expect(await index.rebuildCursor(shard)).toBe("");
      await index.saveRebuildCursor(shard, "page-2");
      expect(await index.rebuildCursor(shard)).toBe("page-2");
      await index.finishRebuild(shard, T0);
      expect(await index.rebuildCursor(shard)).toBeUndefined();
      expect(await index.hasEpoch(shard)).toBe(true);
    });

    it("claims the due few among many pending without touching the rest", async () => {
      const index = getIndex();
      await ready(index);
      const tenant = fresh();
      const far = Array.from({ length: 5_000 }, (_, i) => ({
        member: `${tenant}/far${i}`,
        runAt: T0 + 86_400_000 + i,
        body: body(),
      }));
      const near = Array.from({ length: 7 }, (_, i) => ({
        member: `${tenant}/near${i}`,
        runAt: T0 - i,
        body: body(),
      }));
      await index.schedule([...far, ...near], T0 - 100_000, T0 - 100_000, LEASE);
      const claimed = (await claimAll(index, T0, T0)).filter((c) => c.member.startsWith(`${tenant}/`));
      expect(claimed.map((c) => c.member).sort()).toEqual(near.map((n) => n.member).sort());
      const stats = await Promise.all(Array.from({ length: index.shards }, (_, s) => index.shardStats(s)));
      const scheduled = stats.reduce(
        (sum, s) => sum + (s.counters[`${tenant}|test.record|scheduled`] ?? 0),
        0,
      );
      const dispatched = stats.reduce(
        (sum, s) => sum + (s.counters[`${tenant}|test.record|dispatched`] ?? 0),
        0,
      );
      expect(scheduled).toBe(5_000);
      expect(dispatched).toBe(7);
    });
  });
}
