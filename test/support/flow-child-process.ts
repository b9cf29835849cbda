import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { RedisClient } from "../../shared/engine/scripts.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import type { TestHourglass } from "./harness.ts";

/** One start of a `test.flow` handler, as test/support/flow-child.ts (and a test's own copy) records it. */
export interface FlowRun {
  readonly id: string;
  readonly runAt: number;
  readonly start: number;
  readonly pid: number;
}

/**
 * Starts test/support/flow-child.ts, a whole Hourglass process (dispatcher and worker) on `hg`'s
 * tables, queue and key prefix with `env` on top, recording each start in the Redis list `runsKey`.
 * Resolves once it is running; the test kills it with SIGKILL whenever it likes.
 */
export function startFlowChild(
  hg: TestHourglass,
  env: Readonly<Record<string, string>>,
  runsKey: string,
): Promise<ChildProcess> {
  const c = hg.config;
  const proc = spawn(process.execPath, ["--import", "tsx", "test/support/flow-child.ts"], {
    env: {
      ...process.env,
      ...env,
      HOURGLASS_MODE: "local",
      HOURGLASS_KEY_PREFIX: c.keyPrefix,
      HOURGLASS_EVENTS_TABLE: c.tables.events,
      HOURGLASS_LEASES_TABLE: c.tables.leases,
      HOURGLASS_LEDGER_TABLE: c.tables.ledger,
      HOURGLASS_SCHEDULES_TABLE: c.tables.schedules,
      HOURGLASS_QUEUE_NAME: c.queue.name,
      HOURGLASS_LOOKAHEAD_SECONDS: "5",
      LOG_LEVEL: "SILENT",
      FLOW_RUNS_KEY: runsKey,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve(proc);
    });
    proc.on("exit", (code) => reject(new Error(`child exited early (${code})`)));
  });
}

/** Every start recorded in `runsKey`, in the order they were recorded. */
export async function flowRuns(hg: TestHourglass, runsKey: string): Promise<FlowRun[]> {
  return (await hg.redis.lrange(runsKey, 0, -1)).map((line) => JSON.parse(line) as FlowRun);
}

/**
 * The `test.flow` handler: records each start in the Redis list `runsKey` (where `target` says,
 * read at each run, so a test may set them up in `beforeAll`), then works the payload's `workMs`
 * when `work` is set.
 */
export function flowHandler(
  target: () => { redis: RedisClient; runsKey: string },
  options: { work: boolean },
) {
  return defineHandler(
    "test.flow",
    z.object({ workMs: z.number().int().optional() }),
    async (payload, context) => {
      const { redis, runsKey } = target();
      const run: FlowRun = {
        id: context.id,
        runAt: context.runAt.getTime(),
        start: Date.now(),
        pid: process.pid,
      };
      await redis.rpush(runsKey, JSON.stringify(run));
      if (options.work) await sleep(payload.workMs ?? 0);
    },
  );
}
