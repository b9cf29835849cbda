import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeBody } from "../../shared/engine/body.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import { EventValidationError } from "../../shared/events/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Invariant 7 as a property: whatever one tenant sends (valid, past, absurd times) and whatever
 * unreadable entries the index holds on any shard, another tenant's ordinary events scheduled
 * after them all fire, and none early. Run count from FC_RUNS (3 by default: each run waits for
 * real deliveries).
 */
/** Runs by `tenant/id`: ids repeat across tenants here. */
const runs = new Map<string, { runAt: number; startedAt: number }[]>();
const handler = defineHandler("test.record", z.object({}).passthrough(), async (_, context) => {
  const key = `${context.tenant}/${context.id}`;
  runs.set(key, [...(runs.get(key) ?? []), { runAt: context.runAt.getTime(), startedAt: Date.now() }]);
});
let hg: TestHourglass;

beforeAll(async () => {
  // A 1-second look-ahead (the default is 5): the ordinary events can be beyond it and still due
  // soon, so each run waits seconds less for its deliveries.
  hg = await testHourglass(
    { HOURGLASS_SHARDS: "8", HOURGLASS_SHARD_GROUPS: "4", HOURGLASS_LOOKAHEAD_SECONDS: "1" },
    { handlers: [handler] },
  );
});
afterAll(async () => {
  await hg.destroy();
});

const DAY = 86_400_000;

/** What a hostile tenant may send for runAt: epoch 0, before 2000, far past and future, garbage. */
const hostileRunAt = fc.oneof(
  fc.constantFrom(
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "1999-12-31T23:59:59.999Z",
    "2000-01-01T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
  ),
  fc
    .integer({ min: Date.UTC(1900, 0, 1), max: Date.now() + 2 * DAY })
    .map((ms) => new Date(ms).toISOString()),
);

/** Index entries no script could have written, planted straight into a shard. */
const plantedMeta = fc.constantFrom(
  "scheduled|x|1|1",
  "dispatched|1|1|",
  "bogus|1|1|1",
  "running|-1|-5|-9000",
  "dispatched|0|1|-1000",
  "",
);

describe("hostile input never stops another tenant's events", () => {
  it("random hostile events and planted entries across all shards; ordinary events after them all fire, none early", async () => {
    const runtime = startRuntime(hg, { tickMs: 100 });
    let round = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(hostileRunAt, { minLength: 5, maxLength: 40 }),
          fc.array(fc.tuple(fc.nat(), plantedMeta), { minLength: 1, maxLength: 16 }),
          // Beyond the 1 s look-ahead, so the dispatcher (not the create call) must send them.
          fc.array(fc.integer({ min: 1_500, max: 4_000 }), { minLength: 1, maxLength: 12 }),
          async (runAts, planted, offsets) => {
            const hostile = `hostile${round}`;
            const ordinary = `ordinary${round}`;
            round++;
            // The hostile tenant: singles and a batch. Refusals must be validation errors (4xx).
            await Promise.all(
              runAts.slice(0, 5).map((runAt, i) =>
                hg.events
                  .schedule(hostile, { id: `s${i}`, type: "test.record", payload: {}, runAt })
                  .catch((error: unknown) => {
                    expect(error).toBeInstanceOf(EventValidationError);
                  }),
              ),
            );
            await hg.events.scheduleBatch(
              hostile,
              runAts.map((runAt, i) => ({ id: `b${i}`, type: "test.record", payload: {}, runAt })),
            );
            // Entries no script can read, due now, on random shards.
            for (const [n, meta] of planted) {
              const shard = n % hg.config.shards;
              const k = hg.index.keys(shard);
              const member = memberOf(hostile, `planted${n}`);
              await hg.redis.hset(k.body, member, encodeBody({ type: "test.record" }, "journal"));
              await hg.redis.hset(k.meta, member, meta);
              await hg.redis.zadd(k.due, Date.now() - 1_000, member);
              await hg.redis.zadd(k.leased, Date.now() - 1_000, member);
            }

            const now = Date.now();
            const results = await hg.events.scheduleBatch(
              ordinary,
              offsets.map((offset, i) => ({
                id: `o${i}`,
                type: "test.record",
                payload: {},
                runAt: new Date(now + offset).toISOString(),
              })),
            );
            expect(results.every((r) => r.ok)).toBe(true);
            const ids = offsets.map((_, i) => `o${i}`);
            await eventually(
              async () => (ids.every((id) => runsOf(ordinary, id).length > 0) ? true : undefined),
              30_000,
              "every ordinary event to run",
            );
            for (const id of ids) {
              for (const run of runsOf(ordinary, id)) expect(run.startedAt).toBeGreaterThanOrEqual(run.runAt);
            }
          },
        ),
        { numRuns: Number(process.env.FC_RUNS ?? 3) },
      );
    } finally {
      await runtime.stop();
    }
  }, 180_000);
});

function runsOf(tenant: string, id: string) {
  return runs.get(`${tenant}/${id}`) ?? [];
}
