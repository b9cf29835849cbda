import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { LeaseHeldError, StaleLeaseError } from "../../shared/leases/errors.ts";
import { CLOCK_SKEW_MARGIN_MS, LeaseService } from "../../shared/leases/lease-service.ts";
import { LeaseLostError, withLease } from "../../shared/leases/with-lease.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

/** Invariant 6: at most one holder at a time, fencing tokens strictly increase. Real DynamoDB Local. */
let hg: TestHourglass;
let now = Date.now();
let leases: LeaseService;
const tenant = "acme";

beforeAll(async () => {
  hg = await testHourglass();
  // Virtual time: expiry is decided by the clock given to the service, so cycles need no waiting.
  leases = new LeaseService(createDynamoClient(), hg.config.tables.leases, () => now);
});

afterAll(async () => {
  await hg.destroy();
});

describe("leases", () => {
  it("lets exactly one of 50 concurrent acquirers win", async () => {
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

  it("issues strictly increasing fencing tokens across 1,000 acquire/expire cycles", async () => {
    let last = 0;
    for (let i = 0; i < 1_000; i++) {
      const grant = await leases.acquire(tenant, "cycles", `owner-${i % 7}`, 1_000);
      expect(grant.token).toBeGreaterThan(last);
      last = grant.token;
      // Expired, and past the skew margin, so the next owner may take it.
      now += 1_000 + CLOCK_SKEW_MARGIN_MS;
    }
    expect(last).toBe(1_000);
  }, 120_000);

  it("keeps a lease from being taken until it is past expiry by the skew margin", async () => {
    const grant = await leases.acquire(tenant, "margin", "a", 5_000);
    now += 5_000;
    await expect(leases.acquire(tenant, "margin", "b", 5_000)).rejects.toBeInstanceOf(LeaseHeldError);
    now += CLOCK_SKEW_MARGIN_MS;
    const taken = await leases.acquire(tenant, "margin", "b", 5_000);
    expect(taken.token).toBe(grant.token + 1);
  });

  it("lets neither a stale token nor another owner renew or release", async () => {
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

  it("keeps tenants apart: the same lease name in two tenants is two leases", async () => {
    await leases.acquire("t1", "same-name", "a", 10_000);
    const other = await leases.acquire("t2", "same-name", "b", 10_000);
    expect(other.token).toBe(1);
  });

  it("withLease aborts the work when the lease is taken after it expired, and fences the old holder", async () => {
    const real = new LeaseService(createDynamoClient(), hg.config.tables.leases);
    const lost: unknown[] = [];
    let tokenSeen = 0;
    const outcome = withLease(
      real,
      "stolen",
      300,
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

  it("withLease releases the lease when the work is done", async () => {
    const real = new LeaseService(createDynamoClient(), hg.config.tables.leases);
    const result = await withLease(real, "tidy", 5_000, async () => "done", { tenant, owner: "w" });
    expect(result).toBe("done");
    expect((await real.get(tenant, "tidy")).held).toBe(false);
  });
});
