import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { dueCountKey, heldKeys, memberOf, parseMember, tenantDueKey } from "../../shared/engine/keys.ts";
import { createRedis } from "../../shared/engine/redis.ts";
import { RedisIndex } from "../../shared/engine/redis-index.ts";
import { runScript } from "../../shared/engine/scripts.ts";
import type { DispatchMessage } from "../../shared/model/message.ts";

/**
 * Fair claims across tenants (issue 11, issue 33; invariant 7; docs/flow-control.md, "Fairness
 * between tenants"): each shard's waiting events are in one set per tenant, and claims take turns
 * across the tenants. Engine only (one shard of a RedisIndex), no timings.
 */
const redis = createRedis(process.env.HOURGLASS_REDIS_URL ?? "redis://127.0.0.1:6379", false);
let prefix = "";
let index: RedisIndex;
const BODY = "test.t\n{}";

beforeEach(async () => {
  prefix = `td${randomBytes(3).toString("hex")}`;
  index = new RedisIndex(redis, prefix, 1);
  await index.setEpoch(0, "1");
});
afterAll(async () => {
  const keys = await redis.keys("{td*");
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

async function scheduleDue(tenant: string, n: number, runAt: number) {
  const entries = Array.from({ length: n }, (_, i) => ({
    member: memberOf(tenant, `e${i}`),
    runAt,
    body: BODY,
  }));
  for (let i = 0; i < entries.length; i += 500)
    await index.schedule(entries.slice(i, i + 500), Date.now(), 0, 60_000);
}

async function claim(limit: number, now = Date.now()) {
  const result = await index.claim(0, now, now, limit, 60_000);
  if (result.epochMissing) throw new Error("epoch missing");
  return result;
}

/**
 * The per-tenant sets hold exactly the shard's waiting events (includes/due.lua): every event with a
 * body whose meta says scheduled or retrying (or has none) and that is not held back is in its
 * tenant's set at its runAt, and nothing else is; the legacy `due` is empty; `tenants` scores each
 * tenant by its set's earliest; `duecount` is the sum of the sets' sizes. `tenants` names the
 * tenants to look at.
 */
async function expectAgreement(tenants: readonly string[]) {
  const k = index.keys(0);
  expect(await redis.zcard(k.due)).toBe(0);
  const bodies = Object.keys(await redis.hgetall(k.body));
  const metas = await redis.hgetall(k.meta);
  const holds = await redis.hgetall(heldKeys(prefix, 0).holds);
  const expected = new Map<string, Record<string, number | null>>();
  for (const member of bodies) {
    if (holds[member]) continue;
    const meta = metas[member]?.split("|");
    if (meta && meta[0] !== "scheduled" && meta[0] !== "retrying") continue;
    const { tenant, id } = parseMember(member);
    expected.set(tenant, { ...expected.get(tenant), [id]: meta ? Number(meta[3]) : null });
  }
  const earliest: Record<string, number> = {};
  let total = 0;
  for (const tenant of new Set([...tenants, ...expected.keys()])) {
    const own = await redis.zrange(tenantDueKey(prefix, 0, tenant), 0, -1, "WITHSCORES");
    const entries: Record<string, number> = {};
    for (let i = 0; i < own.length; i += 2) entries[own[i]!] = Number(own[i + 1]);
    const want = expected.get(tenant) ?? {};
    expect(Object.keys(entries).sort(), tenant).toEqual(Object.keys(want).sort());
    // Meta's runAt where there is meta (a never-claimed event has none: its set holds its time).
    for (const [id, runAt] of Object.entries(want))
      if (runAt !== null) expect(entries[id], `${tenant}/${id}`).toBe(runAt);
    if (own.length > 0) earliest[tenant] = Math.min(...Object.values(entries));
    total += own.length / 2;
  }
  const listed = await redis.zrange(k.tenants, 0, -1, "WITHSCORES");
  const scores: Record<string, number> = {};
  for (let i = 0; i < listed.length; i += 2) scores[listed[i]!] = Number(listed[i + 1]);
  expect(scores).toEqual(earliest);
  expect(Number((await redis.get(dueCountKey(prefix, 0))) ?? 0)).toBe(total);
}

describe("fair claims across tenants", () => {
  it("a tenant with 100 due beside one with 1,000 due earlier gets all 100 in the first claim, interleaved", async () => {
    const now = Date.now();
    await scheduleDue("big", 1_000, now - 2_000);
    await scheduleDue("small", 100, now - 1_000);
    // Each tenant's set holds all its waiting events; a small one stays a listpack.
    expect(await redis.zcard(tenantDueKey(prefix, 0, "big"))).toBe(1_000);
    expect(await redis.call("OBJECT", "ENCODING", tenantDueKey(prefix, 0, "small"))).toBe("listpack");
    const first = await claim(200, now);
    const tenants = first.claimed.map((c) => parseMember(c.member).tenant);
    expect(tenants.filter((t) => t === "small")).toHaveLength(100);
    expect(tenants.filter((t) => t === "big")).toHaveLength(100);
    // One of each in turn, so the queue is interleaved too.
    expect(tenants.slice(0, 4).sort()).toEqual(["big", "big", "small", "small"]);
    await expectAgreement(["big", "small"]);
    // The rest of the big tenant's backlog follows, and nothing is lost.
    let rest = 0;
    for (let c = await claim(300, now); c.claimed.length > 0; c = await claim(300, now))
      rest += c.claimed.length;
    expect(rest).toBe(900);
    await expectAgreement(["big", "small"]);
    expect(await redis.exists(index.keys(0).tenants)).toBe(0);
  });

  it("more tenants than the batch has room for: one each, the earliest first", async () => {
    const now = Date.now();
    for (let t = 0; t < 10; t++) await scheduleDue(`t${t}`, 5, now - 10_000 + t);
    const first = await claim(4, now);
    expect(first.claimed.map((c) => parseMember(c.member).tenant)).toEqual(["t0", "t1", "t2", "t3"]);
  });

  it("entries in `due` the per-tenant index lacks (an index from before it) are still claimed, and re-indexed from the head", async () => {
    const now = Date.now();
    const k = index.keys(0);
    await scheduleDue("big", 200, now - 5_000);
    // Written straight into `due` and the body, as an index from before the per-tenant one holds them.
    for (let i = 0; i < 40; i++) {
      await redis.zadd(k.due, now - 6_000, memberOf("old", `o${i}`));
      await redis.hset(k.body, memberOf("old", `o${i}`), BODY);
    }
    const first = await claim(20, now);
    expect(first.claimed).toHaveLength(20);
    // The head (the old tenant's, due first) was indexed, so it had its turn beside the big one.
    expect(first.claimed.filter((c) => c.member.startsWith("old/")).length).toBeGreaterThan(0);
    let total = first.claimed.length;
    for (let c = await claim(50, now); c.claimed.length > 0; c = await claim(50, now))
      total += c.claimed.length;
    expect(total).toBe(240);
    await expectAgreement(["big", "old"]);
  });

  it("a legacy `due` entry at another time than its copy in the tenant's set (an old window) wins: not claimed before it", async () => {
    const now = Date.now();
    const k = index.keys(0);
    const member = memberOf("drift", "d1");
    // The old layout, by hand: `due` the judge, a window copy at another (earlier) time.
    await redis.hset(k.body, member, BODY);
    await redis.zadd(k.due, now + 60_000, member);
    await redis.zadd(tenantDueKey(prefix, 0, "drift"), now - 1_000, "d1");
    await redis.zadd(k.tenants, now - 1_000, "drift");
    expect(await index.inspect(member)).toMatchObject({ status: "scheduled", runAt: now + 60_000 });
    expect((await index.shardStats(0)).due).toBe(1);
    expect((await claim(10, now)).claimed).toEqual([]);
    expect((await index.shardStats(0)).due).toBe(1);
    // A claim that looks far enough ahead takes it at the legacy time.
    const ahead = await index.claim(0, now, now + 60_000, 10, 60_000);
    if (ahead.epochMissing) throw new Error("epoch missing");
    expect(ahead.claimed.map((c) => [c.member, c.runAt])).toEqual([[member, now + 60_000]]);
    expect((await index.shardStats(0)).due).toBe(0);
    await expectAgreement(["drift"]);
  });

  it("upgrade from the windows of 128: every legacy event is claimed once, the windows take their turns from the first claim, and the shard's count stays exact", async () => {
    const now = Date.now();
    const k = index.keys(0);
    // The old layout, by hand: every waiting event in `due`, copies of each tenant's first 128 in
    // its window, `tenants` scored by the windows, no count.
    const sizes = { big: 2_500, small: 150 };
    for (const [tenant, n] of Object.entries(sizes)) {
      const runAt = tenant === "big" ? now - 20_000 : now - 1_000;
      for (let i = 0; i < n; i += 500) {
        const ids = Array.from({ length: Math.min(500, n - i) }, (_, j) => `e${i + j}`);
        await redis.zadd(k.due, ...ids.flatMap((id) => [runAt, memberOf(tenant, id)]));
        await redis.hset(k.body, ...ids.flatMap((id) => [memberOf(tenant, id), BODY]));
      }
      const window = Array.from({ length: 128 }, (_, i) => `e${i}`).sort();
      await redis.zadd(tenantDueKey(prefix, 0, tenant), ...window.flatMap((id) => [runAt, id]));
      await redis.zadd(k.tenants, runAt, tenant);
    }
    // One of each written by this layout meanwhile, due later.
    await index.schedule(
      ["big", "small"].map((t) => ({ member: memberOf(t, "new"), runAt: now - 1, body: BODY })),
      now,
      0,
      60_000,
    );
    let waiting = sizes.big + sizes.small + 2;
    expect((await index.shardStats(0)).due).toBe(waiting);
    const seen = new Set<string>();
    const smallPerClaim: number[] = [];
    for (let c = await claim(300, now); c.claimed.length > 0; c = await claim(300, now)) {
      for (const m of c.claimed) {
        expect(seen.has(m.member), m.member).toBe(false);
        seen.add(m.member);
      }
      smallPerClaim.push(c.claimed.filter((m) => m.member.startsWith("small/")).length);
      waiting -= c.claimed.length;
      expect((await index.shardStats(0)).due).toBe(waiting);
    }
    expect(seen.size).toBe(sizes.big + sizes.small + 2);
    // The old window and the new event in the first claim; the rest of the legacy `due` is adopted
    // 1,000 a claim in due order (claim.lua), the big tenant's backlog first: a passing state.
    expect(smallPerClaim.slice(0, 3)).toEqual([129, 0, 22]);
    await expectAgreement(["big", "small"]);
  });

  it("a rebuild's batch restores its waiting events in one write at the end, and a repeat of a member in the batch under a newer version moves it", async () => {
    const now = Date.now();
    const entry = (tenant: string, id: string, runAt: number, version: number) => ({
      member: memberOf(tenant, id),
      runAt,
      body: BODY,
      attempt: 0,
      status: "scheduled" as const,
      version,
    });
    const codes = await index.restore(
      [
        entry("a", "x", now + 5_000, 0),
        entry("b", "y", now + 6_000, 0),
        entry("a", "x", now + 9_000, 2),
        entry("a", "z", now + 1_000, 0),
      ],
      now,
    );
    expect(codes).toEqual([
      ScriptCode.RESTORED,
      ScriptCode.RESTORED,
      ScriptCode.PRESENT,
      ScriptCode.RESTORED,
    ]);
    expect(await index.inspect(memberOf("a", "x"))).toMatchObject({
      status: "scheduled",
      runAt: now + 9_000,
      version: 2,
    });
    expect(await redis.zrange(tenantDueKey(prefix, 0, "a"), 0, -1, "WITHSCORES")).toEqual([
      "z",
      String(now + 1_000),
      "x",
      String(now + 9_000),
    ]);
    expect((await index.shardStats(0)).due).toBe(3);
    await expectAgreement(["a", "b"]);
  });

  it("pacing: with a budget, claims stop at that many handed out and unfinished, and events claimed ahead never hold back those due now", async () => {
    const now = Date.now();
    await scheduleDue("big", 50, now - 1_000);
    const paced = async (until: number) => {
      const result = await index.claim(0, Date.now(), until, 100, 60_000, [], 10);
      if (result.epochMissing) throw new Error("epoch missing");
      return result;
    };
    const first = await paced(Date.now());
    expect(first.claimed).toHaveLength(10);
    expect(first.paced).toBe(true);
    expect((await paced(Date.now())).claimed).toHaveLength(0);
    // Five start and finish: five more may go.
    for (const message of first.claimed.slice(0, 5)) {
      expect((await index.start(message, Date.now(), 60_000)).code).toBe(ScriptCode.OK);
      expect((await index.ack(message)).code).toBe(ScriptCode.OK);
    }
    expect((await paced(Date.now())).claimed).toHaveLength(5);
    await expectAgreement(["big"]);
  });

  it("pacing: events claimed ahead of their time never hold back those due now", async () => {
    await scheduleDue("later", 20, Date.now() + 20_000);
    const claimPaced = async () => {
      const result = await index.claim(0, Date.now(), Date.now() + 30_000, 100, 60_000, [], 10);
      if (result.epochMissing) throw new Error("epoch missing");
      return result;
    };
    const ahead = await claimPaced();
    expect(ahead.claimed.map((c) => parseMember(c.member).tenant)).toEqual(Array(10).fill("later"));
    await scheduleDue("now", 3, Date.now() - 1_000);
    const due = await claimPaced();
    expect(due.claimed.map((c) => parseMember(c.member).tenant)).toEqual(Array(3).fill("now"));
    await expectAgreement(["later", "now"]);
  });

  it("pacing: a claim takes from whichever window has room and events, and says paced only while events wait", async () => {
    const claimPaced = async () => {
      const result = await index.claim(0, Date.now(), Date.now() + 30_000, 100, 60_000, [], 10);
      if (result.epochMissing) throw new Error("epoch missing");
      return result;
    };
    const tenants = (claimed: readonly { member: string }[]) =>
      claimed.map((c) => parseMember(c.member).tenant);
    await scheduleDue("dnow", 12, Date.now() - 1_000);
    await scheduleDue("soon", 5, Date.now() + 20_000);
    const first = await claimPaced();
    expect(tenants(first.claimed).sort()).toEqual([...Array(10).fill("dnow"), ...Array(5).fill("soon")]);
    expect(first.paced).toBe(true);
    // Due now: full, with two waiting; ahead: room, but nothing due there.
    const blocked = await claimPaced();
    expect(blocked.claimed).toEqual([]);
    expect(blocked.paced).toBe(true);
    // Events due ahead arrive: the ahead window takes them while the due-now one stays full.
    const later = Array.from({ length: 3 }, (_, i) => ({
      member: memberOf("late", `l${i}`),
      runAt: Date.now() + 25_000,
      body: BODY,
    }));
    await index.schedule(later, Date.now(), 0, 60_000);
    expect(tenants((await claimPaced()).claimed)).toEqual(["late", "late", "late"]);
    // Two due-now events finish: the two waiting go, and then nothing waits.
    for (const message of first.claimed.filter((c) => c.member.startsWith("dnow/")).slice(0, 2)) {
      expect((await index.start(message, Date.now(), 60_000)).code).toBe(ScriptCode.OK);
      expect((await index.ack(message)).code).toBe(ScriptCode.OK);
    }
    const rest = await claimPaced();
    expect(tenants(rest.claimed)).toEqual(["dnow", "dnow"]);
    const idle = await claimPaced();
    expect(idle.claimed).toEqual([]);
    expect(idle.paced).toBe(false);
    await expectAgreement(["dnow", "soon", "late"]);
  });

  it("pacing: a claim whose windows are full still takes expired leases and released held-back events first", async () => {
    const t0 = Date.now();
    // The held group stays listed (allowance 0) until the last claim: a group not listed is released in full.
    const at = async (now: number, allowances = [{ group: "held|test.t", allowance: 0 }]) => {
      const result = await index.claim(
        0,
        now,
        now,
        100,
        1_000,
        allowances.map((a) => ({ ...a, reason: "rate" as const })),
        2,
      );
      if (result.epochMissing) throw new Error("epoch missing");
      return result;
    };
    await scheduleDue("held", 1, t0 - 2_000);
    expect((await at(t0)).parked).toBe(1);
    await scheduleDue("full", 3, t0 - 1_000);
    const first = await at(t0);
    expect(first.claimed.map((c) => c.member).sort()).toEqual(["full/e0", "full/e1"]);
    expect(first.paced).toBe(true);
    // Their leases ran out, and the window is still full of them: they come back, the third waits.
    const later = await at(t0 + 5_000);
    expect(later.claimed.map((c) => [c.member, c.redelivered]).sort()).toEqual([
      ["full/e0", true],
      ["full/e1", true],
    ]);
    expect(later.paced).toBe(true);
    // The held-back event's group may take one again: released although the window is full.
    const released = await at(t0 + 5_001, [{ group: "held|test.t", allowance: 1 }]);
    expect(released.claimed.map((c) => c.member)).toEqual(["held/e0"]);
    expect(released.paced).toBe(true);
    await expectAgreement(["full"]);
  });

  it("pacing: creates due within the look-ahead go to the queue on the spot only within the budget; the rest wait for a fair claim", async () => {
    const paced = new RedisIndex(redis, prefix, 1, 5);
    const now = Date.now();
    const entries = Array.from({ length: 8 }, (_, i) => ({
      member: memberOf("flood", `f${i}`),
      runAt: now - 1,
      body: BODY,
    }));
    const codes = await paced.schedule(entries, now, now + 5_000, 60_000);
    expect(codes.filter((c) => c === ScriptCode.DISPATCHED)).toHaveLength(5);
    expect(codes.filter((c) => c === ScriptCode.SCHEDULED)).toHaveLength(3);
    await expectAgreement(["flood"]);
  });

  it("property: the per-tenant sets hold exactly the waiting events after any sequence of schedule, reschedule, cancel, claim, start, retry, bury, revive, hold, forget, restore and evict", async () => {
    const TENANTS = ["a", "b", "c"];
    const member = fc.record({ tenant: fc.constantFrom(...TENANTS), id: fc.integer({ min: 0, max: 7 }) });
    const at = fc.integer({ min: -5_000, max: 5_000 });
    const op = fc.oneof(
      fc.record({ kind: fc.constant("schedule" as const), m: member, at, direct: fc.boolean() }),
      fc.record({ kind: fc.constant("reschedule" as const), m: member, at, direct: fc.boolean() }),
      fc.record({ kind: fc.constant("cancel" as const), m: member }),
      fc.record({
        kind: fc.constant("claim" as const),
        limit: fc.integer({ min: 1, max: 6 }),
        held: fc.option(
          fc.record({ tenant: fc.constantFrom(...TENANTS), allowance: fc.integer({ min: 0, max: 2 }) }),
        ),
      }),
      fc.record({ kind: fc.constant("start" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("retry" as const), pick: fc.nat(), at }),
      fc.record({ kind: fc.constant("bury" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("revive" as const), m: member, at }),
      fc.record({ kind: fc.constant("hold" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("forget" as const), m: member }),
      fc.record({
        kind: fc.constant("restore" as const),
        m: member,
        at,
        status: fc.constantFrom("scheduled" as const, "retrying" as const, "dead" as const),
        version: fc.integer({ min: 0, max: 3 }),
      }),
      fc.record({ kind: fc.constant("evict" as const), m: member }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), async (ops) => {
        prefix = `td${randomBytes(3).toString("hex")}`;
        index = new RedisIndex(redis, prefix, 1);
        await index.setEpoch(0, "1");
        const k = index.keys(0);
        const dispatched: DispatchMessage[] = [];
        const running: DispatchMessage[] = [];
        const pick = (list: DispatchMessage[], i: number) => list.splice(i % list.length, 1)[0];
        const name = (m: { tenant: string; id: number }) => memberOf(m.tenant, `e${m.id}`);
        for (const o of ops) {
          const now = Date.now();
          switch (o.kind) {
            case "schedule":
              await index.schedule(
                [{ member: name(o.m), runAt: now + o.at, body: BODY }],
                now,
                o.direct ? now : 0,
                60_000,
              );
              break;
            case "reschedule":
              await index.reschedule(name(o.m), now + o.at, now, o.direct ? now : 0, 60_000);
              break;
            case "cancel":
              await index.cancel(name(o.m), now);
              break;
            case "claim": {
              const allowances = o.held
                ? [{ group: `${o.held.tenant}|test.t`, allowance: o.held.allowance, reason: "rate" as const }]
                : [];
              const result = await index.claim(0, now, now + 1_000, o.limit, 60_000, allowances);
              if (result.epochMissing) throw new Error("epoch missing");
              for (const c of result.claimed) {
                expect(c.runAt).toBeLessThanOrEqual(now + 1_000);
                dispatched.push(c);
              }
              break;
            }
            case "start": {
              const message = dispatched.length > 0 ? pick(dispatched, o.pick) : undefined;
              if (message && (await index.start(message, now + 10_000, 60_000)).code === ScriptCode.OK)
                running.push(message);
              break;
            }
            case "retry": {
              const message = running.length > 0 ? pick(running, o.pick) : undefined;
              if (message) await index.retry(message, now + o.at);
              break;
            }
            case "bury": {
              const message = running.length > 0 ? pick(running, o.pick) : undefined;
              if (message) await index.bury(message, now);
              break;
            }
            case "revive":
              await index.revive(name(o.m), now + o.at);
              break;
            case "hold": {
              const message = dispatched.length > 0 ? pick(dispatched, o.pick) : undefined;
              if (message) await index.hold([message], "rate", "dispatched");
              break;
            }
            case "forget":
              await index.forget(name(o.m), undefined);
              break;
            case "restore":
              await index.restore(
                [
                  {
                    member: name(o.m),
                    runAt: now + o.at,
                    body: BODY,
                    attempt: 0,
                    status: o.status,
                    version: o.version,
                  },
                ],
                now,
              );
              break;
            case "evict": {
              const meta = await redis.hget(k.meta, name(o.m));
              const version = Number(meta?.split("|")[4] ?? 0);
              await runScript(redis, "evict", k, [name(o.m), version, now, 1_000]);
              break;
            }
          }
          await expectAgreement(TENANTS);
        }
        const keys = await redis.keys(`{${prefix}:*`);
        if (keys.length > 0) await redis.del(...keys);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
