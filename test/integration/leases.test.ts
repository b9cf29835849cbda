import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import {
  LeaseHeldError,
  LeaseLostError,
  LeaseValidationError,
  StaleLeaseError,
} from "../../shared/leases/errors.ts";
import { CLOCK_SKEW_MARGIN_MS, type LeaseGrant, LeaseService } from "../../shared/leases/lease-service.ts";
import { withLease } from "../../shared/leases/with-lease.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

/** Invariant 6: at most one holder at a time, fencing tokens strictly increase. Real DynamoDB Local. */
let hg: TestHourglass;
let now = Date.now();
let leases: LeaseService;
let real: LeaseService;
let n = 0;
/** Every test works in a tenant of its own, so no assertion depends on which tests ran before. */
const fresh = () => `lease-t${n++}`;

beforeAll(async () => {
  hg = await testHourglass();
  // Virtual time: expiry is decided by the clock given to the service, so cycles need no waiting.
  leases = new LeaseService(createDynamoClient(), hg.config.tables.leases, () => now);
  real = new LeaseService(createDynamoClient(), hg.config.tables.leases);
});

afterAll(async () => {
  await hg.destroy();
});

/** A small seeded generator, so a failing contention run can be replayed from its seed. */
function prng(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe("leases", () => {
  it("lets exactly one of 50 concurrent acquirers win", async () => {
    const tenant = fresh();
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => leases.acquire(tenant, "race", `owner-${i}`, 30_000)),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const lost of results.filter((r) => r.status === "rejected")) {
      expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(LeaseHeldError);
      expect(((lost as PromiseRejectedResult).reason as LeaseHeldError).holder).toBe(
        (won[0] as PromiseFulfilledResult<{ owner: string }>).value.owner,
      );
    }
    const state = await leases.get(tenant, "race");
    expect(state.held).toBe(true);
    expect(state.token).toBe(1);
  });

  it("keeps one holder at a time and strictly increasing tokens while 8 owners race to acquire, renew, release and steal for 1,000 operations", async () => {
    const tenant = fresh();
    const seed = Date.now() % 1_000_000;
    const random = prng(seed);
    // Its own virtual clock, advanced by the racers themselves: time passes while they work, so
    // some holders renew in time, some let the lease lapse and have it stolen, some release it.
    let clock = 1_000_000;
    const ttl = 5_000;
    const contended = new LeaseService(createDynamoClient(), hg.config.tables.leases, () => clock);
    /** What each holder believed: it held `token` from when the grant arrived until `until`. */
    const held = new Map<number, { owner: string; from: number; until: number; released?: number }>();
    let maxReceivedToken = 0;
    const counts = { acquired: 0, renewed: 0, released: 0, refused: 0, stale: 0 };
    await Promise.all(
      Array.from({ length: 8 }, async (_, o) => {
        const owner = `owner-${o}`;
        let mine: LeaseGrant | undefined;
        for (let i = 0; i < 125; i++) {
          clock += Math.floor(random() * 800);
          const roll = random();
          try {
            if (mine && roll < 0.75) {
              const sent = clock;
              const grant = await contended.renew(tenant, "contended", owner, mine.token, ttl);
              expect(grant.expiresAt).toBe(sent + ttl);
              const entry = held.get(grant.token)!;
              expect(entry.owner).toBe(owner);
              entry.until = Math.max(entry.until, grant.expiresAt);
              mine = grant;
              counts.renewed++;
            } else if (mine && roll < 0.85) {
              // The holder stops using the lease the moment it asks to give it up.
              held.get(mine.token)!.released = clock;
              await contended.release(tenant, "contended", owner, mine.token);
              mine = undefined;
              counts.released++;
            } else if (!mine && roll < 0.5) {
              const floor = maxReceivedToken;
              const grant = await contended.acquire(tenant, "contended", owner, ttl);
              // Strictly increasing: above every token any acquirer had received before this one asked.
              expect(grant.token, `seed ${seed}`).toBeGreaterThan(floor);
              expect(held.has(grant.token), `token ${grant.token} granted twice (seed ${seed})`).toBe(false);
              held.set(grant.token, { owner, from: clock, until: grant.expiresAt });
              maxReceivedToken = Math.max(maxReceivedToken, grant.token);
              mine = grant;
              counts.acquired++;
            }
          } catch (error) {
            if (error instanceof LeaseHeldError) counts.refused++;
            else if (error instanceof StaleLeaseError) {
              // Expired by the clock, or stolen (or its release lost the race with a thief).
              mine = undefined;
              counts.stale++;
            } else throw error;
          }
          await new Promise((done) => setImmediate(done));
        }
      }),
    );
    // The history: tokens 1..K, each held by one owner, and no two holders' beliefs overlap.
    const tokens = [...held.keys()].sort((a, b) => a - b);
    expect(tokens).toEqual(Array.from({ length: tokens.length }, (_, i) => i + 1));
    for (let i = 1; i < tokens.length; i++) {
      const before = held.get(tokens[i - 1]!)!;
      const after = held.get(tokens[i]!)!;
      // A holder believes until it releases or its last confirmed expiry, whichever comes first: a
      // release sent after the lease lapsed (and was stolen) proves nothing about the overlap.
      const end = Math.min(before.released ?? Number.POSITIVE_INFINITY, before.until);
      expect(
        end,
        `holders of tokens ${tokens[i - 1]} and ${tokens[i]} overlap (seed ${seed})`,
      ).toBeLessThanOrEqual(after.from);
      // Taken without a release: only once expired by the skew margin.
      if (before.released === undefined || before.released > after.from)
        expect(before.until + CLOCK_SKEW_MARGIN_MS).toBeLessThanOrEqual(after.from);
    }
    // The run really contended: grants, renewals, refusals, releases and steals all happened.
    const steals = tokens.filter((_, i) => {
      const before = i > 0 ? held.get(tokens[i - 1]!) : undefined;
      return (
        before !== undefined &&
        (before.released === undefined || before.released > held.get(tokens[i]!)!.from)
      );
    });
    // (Bounds far below what a run gives, about 35 grants, 55 renewals, 400 refusals, 10
    // releases and 20 steals, so only a run that stopped contending fails them.)
    const seen = JSON.stringify({ ...counts, steals: steals.length, seed });
    expect(counts.acquired, seen).toBeGreaterThan(10);
    expect(counts.renewed, seen).toBeGreaterThan(10);
    expect(counts.refused, seen).toBeGreaterThan(50);
    expect(counts.released, seen).toBeGreaterThan(1);
    expect(steals.length, seen).toBeGreaterThan(1);
    expect((await contended.get(tenant, "contended")).token).toBe(tokens.length);
  }, 120_000);

  it("keeps a lease from being taken until it is past expiry by the skew margin", async () => {
    const tenant = fresh();
    const grant = await leases.acquire(tenant, "margin", "a", 5_000);
    now += 5_000;
    await expect(leases.acquire(tenant, "margin", "b", 5_000)).rejects.toBeInstanceOf(LeaseHeldError);
    now += CLOCK_SKEW_MARGIN_MS;
    const taken = await leases.acquire(tenant, "margin", "b", 5_000);
    expect(taken.token).toBe(grant.token + 1);
  });

  it("lets neither a stale token nor another owner renew or release", async () => {
    const tenant = fresh();
    const first = await leases.acquire(tenant, "stale", "a", 1_000);
    now += 1_000 + CLOCK_SKEW_MARGIN_MS;
    const second = await leases.acquire(tenant, "stale", "b", 10_000);
    await expect(leases.renew(tenant, "stale", "a", first.token, 10_000)).rejects.toBeInstanceOf(
      StaleLeaseError,
    );
    await expect(leases.release(tenant, "stale", "a", first.token)).rejects.toBeInstanceOf(StaleLeaseError);
    await expect(leases.renew(tenant, "stale", "a", second.token, 10_000)).rejects.toBeInstanceOf(
      StaleLeaseError,
    );
    await expect(leases.release(tenant, "stale", "b", first.token)).rejects.toBeInstanceOf(StaleLeaseError);
    const renewed = await leases.renew(tenant, "stale", "b", second.token, 20_000);
    expect(renewed.expiresAt).toBe(now + 20_000);
    await leases.release(tenant, "stale", "b", second.token);
    expect((await leases.get(tenant, "stale")).held).toBe(false);
    // Released, not forgotten: the next token still goes up.
    expect((await leases.acquire(tenant, "stale", "c", 1_000)).token).toBe(second.token + 1);
  });

  it("gives an owner that holds the lease its own lease back: same token, expiry moved to now + ttl", async () => {
    const tenant = fresh();
    const first = await leases.acquire(tenant, "again", "vm", 10_000);
    expect(first.alreadyHeld).toBeUndefined();
    now += 3_000;
    const again = await leases.acquire(tenant, "again", "vm", 10_000);
    expect(again).toEqual({
      name: "again",
      owner: "vm",
      token: first.token,
      expiresAt: now + 10_000,
      alreadyHeld: true,
    });
    // Another owner still waits, and the lease item says what the holder was told.
    await expect(leases.acquire(tenant, "again", "other", 10_000)).rejects.toMatchObject({
      holder: "vm",
      expiresAt: now + 10_000,
    });
    expect(await leases.get(tenant, "again")).toMatchObject({
      holder: "vm",
      token: first.token,
      expiresAt: now + 10_000,
    });
    // The token it had still renews and releases: a repeat changed nothing else.
    await leases.renew(tenant, "again", "vm", first.token, 10_000);
    // Expired (within the skew margin, so nobody else may take it yet): the same owner gets a new
    // token, since it may have stopped using the old one and something may fence it.
    now += 10_000;
    const renewedAfterExpiry = await leases.acquire(tenant, "again", "vm", 10_000);
    expect(renewedAfterExpiry.token).toBe(first.token + 1);
    expect(renewedAfterExpiry.alreadyHeld).toBeUndefined();
    now += 10_000 + CLOCK_SKEW_MARGIN_MS;
    const taken = await leases.acquire(tenant, "again", "other", 10_000);
    expect(taken.token).toBe(first.token + 2);
    await expect(leases.acquire(tenant, "again", "vm", 10_000)).rejects.toBeInstanceOf(LeaseHeldError);
  });

  it("keeps one holder and one token when an owner's repeats race other owners for a free lease", async () => {
    const tenant = fresh();
    const owners = ["a", "b", "c", "d"];
    const attempts = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => leases.acquire(tenant, "repeat-race", owners[i % 4]!, 30_000)),
    );
    const grants = attempts.flatMap((a) => (a.status === "fulfilled" ? [a.value] : []));
    for (const a of attempts) {
      if (a.status === "rejected") expect(a.reason).toBeInstanceOf(LeaseHeldError);
    }
    // Every grant went to one owner, with one token: the first, its repeats given back the same.
    expect(new Set(grants.map((g) => g.owner)).size).toBe(1);
    expect(new Set(grants.map((g) => g.token))).toEqual(new Set([1]));
    expect(grants.filter((g) => !g.alreadyHeld)).toHaveLength(1);
    expect(grants.length).toBeGreaterThan(1);
    expect((await leases.get(tenant, "repeat-race")).token).toBe(1);
  });

  it("keeps tenants apart: the same lease name in two tenants is two leases", async () => {
    const [t1, t2] = [fresh(), fresh()];
    await leases.acquire(t1, "same-name", "a", 10_000);
    const other = await leases.acquire(t2, "same-name", "b", 10_000);
    expect(other.token).toBe(1);
  });
});

describe("withLease", () => {
  it("aborts the work when the lease is taken after it expired, and fences the old holder", async () => {
    const tenant = fresh();
    const lost: unknown[] = [];
    let tokenSeen = 0;
    // 3 s, renewed every second: the renewal after the theft is refused as stale long before the
    // local deadline (2.25 s after a confirmed request) could stop the work first. With 300 ms,
    // a renewal slower than 125 ms (a loaded machine) lost to that deadline: RenewalTimeoutError.
    const outcome = withLease(
      real,
      "stolen",
      3_000,
      async (signal, token) => {
        tokenSeen = token;
        await new Promise<void>((resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
          setTimeout(resolve, 10_000);
        });
      },
      { tenant, owner: "worker-a", onLost: (e) => lost.push(e) },
    );
    // The holder stalls (simulated by taking the lease behind its back once it is past expiry).
    await new Promise((done) => setTimeout(done, 50));
    const thief = new LeaseService(createDynamoClient(), hg.config.tables.leases, () => Date.now() + 10_000);
    const stolen = await thief.acquire(tenant, "stolen", "worker-b", 60_000);
    await expect(outcome).rejects.toBeInstanceOf(LeaseLostError);
    expect(lost[0]).toBeInstanceOf(StaleLeaseError);
    expect(stolen.token).toBeGreaterThan(tokenSeen);
    expect((await real.get(tenant, "stolen")).holder).toBe("worker-b");
  });

  it("releases the lease when the work is done", async () => {
    const tenant = fresh();
    const result = await withLease(real, "tidy", 5_000, async () => "done", { tenant, owner: "w" });
    expect(result).toBe("done");
    expect((await real.get(tenant, "tidy")).held).toBe(false);
  });

  it.each([
    ["after its first renewal", 1],
    ["on its first renewal", 0],
  ])(
    "stops the work before the lease expires when a renewal hangs %s instead of failing",
    async (_, good) => {
      const tenant = fresh();
      /** DynamoDB that stops answering renewals (a partition, a stuck socket) without an error. */
      class HangingRenewals extends LeaseService {
        renewals = 0;
        override renew(...args: Parameters<LeaseService["renew"]>) {
          return this.renewals++ < good ? super.renew(...args) : new Promise<LeaseGrant>(() => {});
        }
      }
      const hanging = new HangingRenewals(createDynamoClient(), hg.config.tables.leases);
      const lost: unknown[] = [];
      let abortedAt = 0;
      // 4 s: the work stops 1 s (the margin) before the last recorded expiry, room for a late
      // timer on a loaded machine; with 1.5 s the margin was 375 ms.
      const outcome = withLease(
        hanging,
        "hang",
        4_000,
        (signal) =>
          new Promise<string>((resolve, reject) => {
            signal.addEventListener(
              "abort",
              () => {
                abortedAt = Date.now();
                reject(signal.reason);
              },
              { once: true },
            );
            setTimeout(() => resolve("ran past the lease"), 12_000);
          }),
        { tenant, owner: "w", onLost: (e) => lost.push(e) },
      );
      await expect(outcome).rejects.toBeInstanceOf(LeaseLostError);
      expect(hanging.renewals).toBeGreaterThan(good);
      // Stopped before the last expiry DynamoDB recorded, so no new owner can overlap the work.
      const state = await real.get(tenant, "hang");
      expect(state.holder).toBe("w");
      expect(abortedAt).toBeLessThan(state.expiresAt!);
      expect(lost).toHaveLength(1);
    },
    30_000,
  );

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 99, 86_400_001])(
    "refuses a ttl of %s ms before taking the lease",
    async (ttl) => {
      const tenant = fresh();
      let ran = false;
      const outcome = withLease(
        real,
        "bad-ttl",
        ttl,
        async () => {
          ran = true;
        },
        { tenant, owner: "w" },
      );
      await expect(outcome).rejects.toBeInstanceOf(LeaseValidationError);
      expect(ran).toBe(false);
      expect((await real.get(tenant, "bad-ttl")).token).toBe(0);
    },
  );

  it("refuses a ttl that is not a positive whole number of ms at acquire and renew", async () => {
    const tenant = fresh();
    await expect(real.acquire(tenant, "svc-ttl", "w", 0)).rejects.toBeInstanceOf(LeaseValidationError);
    await expect(real.acquire(tenant, "svc-ttl", "w", Number.NaN)).rejects.toBeInstanceOf(
      LeaseValidationError,
    );
    const grant = await real.acquire(tenant, "svc-ttl", "w", 5_000);
    await expect(real.renew(tenant, "svc-ttl", "w", grant.token, -5)).rejects.toBeInstanceOf(
      LeaseValidationError,
    );
    expect((await real.get(tenant, "svc-ttl")).token).toBe(1);
  });
});
