import { randomBytes } from "node:crypto";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { memberOf, parseMember } from "../../shared/engine/keys.ts";
import { createRedis } from "../../shared/engine/redis.ts";
import { RedisIndex } from "../../shared/engine/redis-index.ts";

/**
 * Fair shares in every claim, whatever the backlogs (issue 33, finding 3; docs/flow-control.md,
 * "Fairness between tenants"). The rule claim.lua guarantees: the room of a claim is shared
 * max-min fairly among the tenants with due events. Every tenant that is not given all its due
 * events gets the same count give or take one, and one given all its due events got no more than
 * that. So each gets min(its due, about room / tenants) in every claim until it runs out. Before,
 * a tenant's window held 128 events, and past it a small tenant beside a large one got
 * 50, 50, 28, then nothing for many claims. Engine only (one shard of a RedisIndex), no timings.
 */
const redis = createRedis(process.env.HOURGLASS_REDIS_URL ?? "redis://127.0.0.1:6379", false);
let prefix = "";
let index: RedisIndex;
const BODY = "test.t\n{}";

beforeEach(async () => {
  prefix = `fs${randomBytes(3).toString("hex")}`;
  index = new RedisIndex(redis, prefix, 1);
  await index.setEpoch(0, "1");
});
afterAll(async () => {
  const keys = await redis.keys("{fs*");
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

async function scheduleDue(tenant: string, n: number, runAt: (i: number) => number) {
  for (let i = 0; i < n; i += 1_000) {
    const entries = Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
      member: memberOf(tenant, `e${i + j}`),
      runAt: runAt(i + j),
      body: BODY,
    }));
    await index.schedule(entries, Date.now(), 0, 60_000);
  }
}

/** Claims in batches of `limit` until nothing is left; returns each claim's count per tenant. */
async function drain(tenants: readonly string[], limit: number, now: number) {
  const claims: Record<string, number>[] = [];
  for (;;) {
    const result = await index.claim(0, now, now, limit, 60_000);
    if (result.epochMissing) throw new Error("epoch missing");
    if (result.claimed.length === 0) return claims;
    const counts = Object.fromEntries(tenants.map((t) => [t, 0]));
    for (const c of result.claimed) counts[parseMember(c.member).tenant]! += 1;
    claims.push(counts);
  }
}

/** The rule, claim by claim, from what each tenant had due before the claim. */
function expectMaxMinFair(
  claims: readonly Record<string, number>[],
  due: Record<string, number>,
  limit: number,
) {
  const left = { ...due };
  claims.forEach((counts, n) => {
    const total = Object.values(left).reduce((a, b) => a + b, 0);
    expect(
      Object.values(counts).reduce((a, b) => a + b, 0),
      `claim ${n}`,
    ).toBe(Math.min(limit, total));
    const capped = Object.keys(counts).filter((t) => counts[t]! < left[t]!);
    const shares = capped.map((t) => counts[t]!);
    if (shares.length > 0) {
      expect(
        Math.max(...shares) - Math.min(...shares),
        `claim ${n}: ${JSON.stringify(counts)}`,
      ).toBeLessThanOrEqual(1);
      for (const t of Object.keys(counts))
        expect(counts[t]!, `claim ${n}: ${t} in ${JSON.stringify(counts)}`).toBeLessThanOrEqual(
          Math.max(...shares),
        );
    }
    for (const t of Object.keys(counts)) left[t] = left[t]! - counts[t]!;
  });
  expect(Object.values(left).every((n) => n === 0)).toBe(true);
}

describe("fair shares in every claim", () => {
  it("5,000 due beside 300 due, claims of 100: 50 and 50 in each claim until the small one runs out, then 100", async () => {
    const now = Date.now();
    // The large tenant's backlog is due first, so due order would serve it first.
    await scheduleDue("big", 5_000, () => now - 10_000);
    await scheduleDue("small", 300, () => now - 5_000);
    const claims = await drain(["big", "small"], 100, now);
    expect(claims.slice(0, 6)).toEqual(Array(6).fill({ big: 50, small: 50 }));
    expect(claims.slice(6)).toEqual(Array(47).fill({ big: 100, small: 0 }));
  });

  it("three backlogs of any sizes, spread over time: max-min fair in every claim, and each tenant in its due order", async () => {
    const now = Date.now();
    const due = { a: 3_000, b: 700, c: 130 };
    await scheduleDue("a", due.a, (i) => now - 60_000 + i);
    await scheduleDue("b", due.b, (i) => now - 30_000 + 7 * i);
    await scheduleDue("c", due.c, (i) => now - 1_000 + i);
    const order: Record<string, number[]> = { a: [], b: [], c: [] };
    const claims: Record<string, number>[] = [];
    for (;;) {
      const result = await index.claim(0, now, now, 90, 60_000);
      if (result.epochMissing) throw new Error("epoch missing");
      if (result.claimed.length === 0) break;
      const counts = { a: 0, b: 0, c: 0 } as Record<string, number>;
      for (const c of result.claimed) {
        const { tenant } = parseMember(c.member);
        counts[tenant]! += 1;
        order[tenant]!.push(c.runAt);
      }
      claims.push(counts);
    }
    expectMaxMinFair(claims, due, 90);
    for (const t of ["a", "b", "c"]) expect(order[t], t).toEqual([...order[t]!].sort((x, y) => x - y));
  });

  it("the small tenant keeps its share when the large one's events are due ahead of its own and more arrive between claims", async () => {
    const now = Date.now();
    await scheduleDue("big", 2_000, () => now - 20_000);
    await scheduleDue("small", 250, () => now - 1);
    const smallIn = async () => {
      const result = await index.claim(0, now, now, 100, 60_000);
      if (result.epochMissing) throw new Error("epoch missing");
      return result.claimed.filter((c) => parseMember(c.member).tenant === "small").length;
    };
    expect(await smallIn()).toBe(50);
    // More of the large tenant's events arrive, due earlier still: the small one's share holds.
    const more = Array.from({ length: 1_000 }, (_, i) => ({
      member: memberOf("big", `late${i}`),
      runAt: now - 30_000,
      body: BODY,
    }));
    await index.schedule(more, Date.now(), 0, 60_000);
    expect([await smallIn(), await smallIn(), await smallIn(), await smallIn(), await smallIn()]).toEqual([
      50, 50, 50, 50, 0,
    ]);
  });
});
