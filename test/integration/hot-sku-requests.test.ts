import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stockKeys } from "../../shared/engine/keys.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { type RedisServer, startRedisServer } from "../support/redis-servers.ts";

/**
 * Issue 33, finding 8: what 300 concurrent holds on one SKU cost besides their admission, counted
 * (requests, not times: the machine is shared). The 100 admitted holds' expiry events go to the
 * journal in batches, not as 100 conditional puts; the SKU's Redis count is built when its stock
 * arrives, and rebuilt once per process however many holds find it missing. Own redis-server (this
 * file reads and resets its command counts); DynamoDB Local shared, with this file's own tables.
 */
let server: RedisServer;
let hg: TestHourglass;
let redis: Redis;
const calls: Record<string, number> = {};
let n = 0;
const fresh = () => `q${n++}`;

beforeAll(async () => {
  server = await startRedisServer();
  hg = await testHourglass({ HOURGLASS_REDIS_URL: server.url });
  redis = new Redis(server.url);
  hg.dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? "unknown";
      calls[command] = (calls[command] ?? 0) + 1;
      return next(args);
    },
    { step: "initialize", name: "countCommands" },
  );
});

afterAll(async () => {
  redis?.disconnect();
  await hg?.destroy();
  await server?.kill();
});

/** DynamoDB requests by command while `work` runs. */
async function counted(work: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = { ...calls };
  await work();
  return Object.fromEntries(
    Object.entries(calls)
      .map(([command, count]) => [command, count - (before[command] ?? 0)] as const)
      .filter(([, count]) => count > 0),
  );
}

/** Redis commands by name while `work` runs (this file's server only). */
async function redisCommands(work: () => Promise<unknown>): Promise<Record<string, number>> {
  await redis.config("RESETSTAT");
  await work();
  const info = await redis.info("commandstats");
  return Object.fromEntries(
    [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]),
  );
}

const holdMany = (tenant: string, sku: string, count: number) =>
  Promise.allSettled(
    Array.from({ length: count }, () =>
      hg.ledger!.hold(tenant, { items: [{ sku, quantity: 1 }], holdSeconds: 30 }),
    ),
  );

describe("hot SKU holds, counted", () => {
  it("writes the admitted holds' expiry events in batches, not one conditional put each", async () => {
    const tenant = fresh();
    await hg.ledger!.receive(tenant, "drop", { quantity: 100 });
    let results: PromiseSettledResult<unknown>[] = [];
    const requests = await counted(async () => {
      results = await holdMany(tenant, "drop", 300);
    });
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(100);
    // The ledger writes transactions; the journal takes the expiry events 25 to a BatchWriteItem
    // (an event written alone, as the first hold's is, is one PutItem). Before: 100 PutItem
    // calls, each conditioned on the id being new, which it always is.
    expect(requests.PutItemCommand ?? 0).toBeLessThanOrEqual(2);
    expect(requests.BatchWriteItemCommand ?? 0).toBeLessThanOrEqual(8);
    const reservation = (results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<{
      reservation: { expiryEventId: string };
    }>)!.value.reservation;
    expect((await hg.events.get(tenant, reservation.expiryEventId)).status).toBe("scheduled");
  }, 60_000);

  it("builds a SKU's Redis count when its stock arrives", async () => {
    const tenant = fresh();
    const keys = stockKeys(hg.config.keyPrefix, tenant, "new");
    await hg.ledger!.receive(tenant, "new", { quantity: 7 });
    expect(await redis.hget(keys.level, "available")).toBe("7");
  });

  it("rebuilds a count Redis lost once for 300 concurrent holds, without polling for it", async () => {
    const tenant = fresh();
    await hg.ledger!.receive(tenant, "lost", { quantity: 100 });
    const keys = stockKeys(hg.config.keyPrefix, tenant, "lost");
    await redis.del(keys.level);
    let results: PromiseSettledResult<unknown>[] = [];
    const commands = await redisCommands(async () => {
      results = await holdMany(tenant, "lost", 300);
    });
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(100);
    // One caller took the rebuild lock and the others of this process waited for its rebuild.
    // Before, each of the 300 tried the lock, and those that lost polled for it every 5 ms (EXISTS,
    // which the admission script also calls, so only the lock's SET tells them apart here).
    expect(commands.set ?? 0).toBe(1);
    expect((await hg.ledger!.reconcile(tenant, "lost")).ok).toBe(true);
  }, 60_000);
});
