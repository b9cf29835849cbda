import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HORIZON_MARGIN_MS } from "../../shared/events/horizon.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { SqsTransport } from "../../shared/transport/sqs.ts";
import { engine } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * The near-horizon boundary (issue 13 §4, docs/horizon.md) as a property: creates, reschedules and
 * cancels with due times on both sides of the horizon, its margin and the loader's watermark, made
 * by services whose clocks run up to a second fast or slow, interleaved with extra loader runs
 * racing the dispatcher's own, while the local runtime dispatches and works. Every accepted event
 * that is not cancelled runs exactly once, never before its (last) runAt; a cancelled one never runs.
 * A 3-second horizon (look-ahead 1 s, ticks of 200 ms) puts the boundary seconds away.
 */
const rec = recorder();
let hg: TestHourglass;
const HORIZON_MS = 3_000;
/** Due times reach past the horizon, its margin and then some. */
const MAX_OFFSET = HORIZON_MS + HORIZON_MARGIN_MS + 4_000;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_SHARDS: "2",
      HOURGLASS_SHARD_GROUPS: "1",
      HOURGLASS_LOOKAHEAD_SECONDS: "1",
      HOURGLASS_TICK_MS: "200",
      HOURGLASS_INDEX_HORIZON_SECONDS: String(HORIZON_MS / 1000),
    },
    { handlers: [rec.handler] },
  );
});
afterAll(async () => {
  await hg?.destroy();
});

type Op =
  | { kind: "create"; id: number; offset: number; skew: number; race: boolean }
  | { kind: "reschedule"; id: number; offset: number; skew: number; race: boolean }
  | { kind: "cancel"; id: number; skew: number; race: boolean }
  | { kind: "wait"; ms: number };

const id = fc.integer({ min: 0, max: 7 });
const skew = fc.integer({ min: -1_000, max: 1_000 });
const race = fc.boolean();
/** Due times cluster around the boundaries: the watermark (now + horizon) and the near limit. */
const offset = fc.oneof(
  fc.integer({ min: -500, max: MAX_OFFSET }),
  fc.integer({ min: HORIZON_MS - 600, max: HORIZON_MS + 600 }),
  fc.integer({ min: HORIZON_MS + HORIZON_MARGIN_MS - 600, max: HORIZON_MS + HORIZON_MARGIN_MS + 600 }),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("create" as const), id, offset, skew, race }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("reschedule" as const), id, offset, skew, race }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("cancel" as const), id, skew, race }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 700 }) }),
    weight: 2,
  },
);

interface Expected {
  runAt: number;
  cancelled: boolean;
}

it("every accepted event runs once and never early, a cancelled one never, across the near horizon", async () => {
  const transport = new SqsTransport(hg.sqs, hg.queueUrl!);
  const runtime = startRuntime(hg, { tickMs: 200 });
  /** Scenarios so far: each takes the next number for its tenant and ids. */
  let round = 0;
  try {
    /** One scenario: its own tenant and ids, so two run side by side without meeting. */
    const scenario = async (ops: readonly Op[]) => {
      const number = round++;
      const tenant = `hzp${process.pid}r${number}`;
      const prefix = `r${number}e`;
      const expected = new Map<string, Expected>();
      const parts0 = engine(hg, { transport });
      for (const step of ops) {
        if (step.kind === "wait") {
          await sleep(step.ms);
          continue;
        }
        const parts = engine(hg, { transport, clock: () => Date.now() + step.skew });
        const name = `${prefix}${step.id}`;
        // A second dispatcher's loader, racing the operation (the runtime's own runs every tick).
        const racing = step.race ? parts.dispatcher.loader.run(Date.now() + 1_000) : Promise.resolve();
        const runAt = step.kind === "cancel" ? 0 : Date.now() + step.offset;
        const at = new Date(runAt).toISOString();
        const attempt = async () => {
          if (step.kind === "create") {
            const result = await parts.service.schedule(tenant, {
              id: name,
              type: "test.record",
              payload: {},
              runAt: at,
            });
            if (result.outcome === "created") expected.set(name, { runAt, cancelled: false });
          } else if (step.kind === "reschedule") {
            const view = await parts.service.reschedule(tenant, name, { runAt: at });
            expected.set(name, { runAt: view.runAt, cancelled: false });
          } else {
            await parts.service.cancel(tenant, name);
            const known = expected.get(name);
            if (known) known.cancelled = true;
          }
        };
        // Refusals (an id repeated with other content, an event already started, finished or
        // cancelled, or unknown) change nothing, and the model says so by not changing either.
        await Promise.all([attempt().catch(() => {}), racing]);
      }
      const last = Math.max(0, ...[...expected.values()].map((e) => e.runAt));
      const unfinished = async () => {
        const left = [];
        for (const [name, e] of expected) {
          const item = await hg.journal!.get(tenant, name);
          const done = e.cancelled ? item?.status === "cancelled" : item?.status === "succeeded";
          if (!done)
            left.push({ name, expected: e, item, live: await hg.index.inspect(`${tenant}/${name}`) });
        }
        return left;
      };
      try {
        await eventually(
          async () => ((await unfinished()).length === 0 ? true : undefined),
          Math.max(0, last - Date.now()) + 15_000,
          `scenario ${number}: every accepted event to finish`,
        );
      } catch (error) {
        const states = await Promise.all(
          Array.from({ length: hg.config.shards }, (_, shard) => parts0.dispatcher.loader.store.state(shard)),
        );
        throw new Error(
          `${(error as Error).message}: ${JSON.stringify({ left: await unfinished(), states, now: Date.now() })}`,
        );
      }
      // Late duplicates would show up here: give the queue a moment past the last due time.
      await sleep(300);
      for (const [name, e] of expected) {
        const runs = rec.runsOf(name);
        if (e.cancelled) {
          expect(runs, `${name} was cancelled`).toEqual([]);
        } else {
          expect(runs, `${name} runs exactly once`).toHaveLength(1);
          expect(runs[0]!.runAt, `${name} ran at its last runAt`).toBe(e.runAt);
          expect(runs[0]!.startedAt, `${name} never early`).toBeGreaterThanOrEqual(e.runAt);
        }
      }
    };
    await fc.assert(
      // Two scenarios a run, side by side: each spends its time waiting for its due times, so
      // three runs check six scenarios (five, one at a time, before) in about three scenarios' time.
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 5, maxLength: 25 }), { minLength: 2, maxLength: 2 }),
        async (scenarios) => {
          await Promise.all(scenarios.map(scenario));
        },
      ),
      {
        numRuns: 3,
        endOnFailure: true,
        // Replays a reported counterexample: FC_SEED=<seed> FC_PATH=<path> npx vitest run <this file>
        ...(process.env.FC_SEED && { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH }),
      },
    );
  } finally {
    await runtime.stop();
  }
}, 300_000);
