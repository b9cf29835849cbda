import { spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime, workerProcesses } from "../../shared/local/runtime.ts";
import { encodeMainArgs } from "../../shared/local/worker-protocol.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { handlers } from "../support/worker-handlers.ts";

/**
 * `npm start`'s worker processes (shared/local/worker-pool.ts): events run in them, one killed
 * with SIGKILL is replaced, and stopping the runtime ends every one of them.
 */
const HANDLERS = fileURLToPath(new URL("../support/worker-handlers.ts", import.meta.url));

describe("worker processes", { timeout: 120_000 }, () => {
  let hg: TestHourglass;
  beforeAll(async () => {
    // The API side validates payloads with the same handlers the workers load.
    hg = await testHourglass({}, { handlers });
  });
  afterAll(async () => {
    await hg.destroy();
  });

  /** The settings of `hg`, as the environment a worker process reads them from. */
  function envOf(h: TestHourglass): NodeJS.ProcessEnv {
    const { config } = h;
    return {
      ...process.env,
      HOURGLASS_MODE: "local",
      HOURGLASS_KEY_PREFIX: config.keyPrefix,
      HOURGLASS_EVENTS_TABLE: config.tables.events,
      HOURGLASS_LEASES_TABLE: config.tables.leases,
      HOURGLASS_LEDGER_TABLE: config.tables.ledger,
      HOURGLASS_SCHEDULES_TABLE: config.tables.schedules,
      HOURGLASS_QUEUE_NAME: config.queue.name,
      HOURGLASS_SHARDS: String(config.shards),
      HOURGLASS_SHARD_GROUPS: String(config.shardGroups),
      HOURGLASS_LOOKAHEAD_SECONDS: String(config.lookAheadMs / 1000),
      LOG_LEVEL: "SILENT",
    };
  }

  async function allSucceed(tenant: string, count: number) {
    const now = Date.now();
    const results = await hg.events.scheduleBatch(
      tenant,
      Array.from({ length: count }, (_, i) => ({
        type: "test.pool",
        payload: {},
        runAt: new Date(now + 500 + i * 20).toISOString(),
      })),
    );
    const ids = results.map((r) => {
      if (!r.ok) throw r.error;
      return r.event.id;
    });
    await eventually(
      async () => {
        const views = await Promise.all(ids.map((id) => hg.events.get(tenant, id)));
        return views.every((v) => v.status === "succeeded") ? true : undefined;
      },
      60_000,
      `${count} events of ${tenant} to succeed`,
    );
  }

  /** A runtime whose worker runs in two processes of its own, on this test's stack. */
  function twoWorkers(
    consumer: Parameters<typeof workerProcesses>[2],
    pool: { restartDelayMs?: number; stopTimeoutMs?: number },
  ) {
    return startRuntime(hg, {
      tickMs: 100,
      workers: {
        ...workerProcesses(2, HANDLERS, consumer),
        env: envOf(hg),
        execArgv: ["--import", "tsx"],
        ...pool,
      },
    });
  }

  it("runs events in them, replaces one killed with SIGKILL, and ends them all on stop", async () => {
    const runtime = twoWorkers({ pollers: 2, maxInFlight: 50 }, { restartDelayMs: 100 });
    const pool = runtime.pool!;
    let stopped = false;
    try {
      await runtime.ready;
      const first = pool.pids;
      expect(first).toHaveLength(2);
      expect(first).not.toContain(process.pid);
      await allSucceed("before", 20);

      process.kill(first[0]!, "SIGKILL");
      await eventually(
        async () => (pool.restarts === 1 && pool.pids.length === 2 ? true : undefined),
        30_000,
        "the killed worker to be replaced",
      );
      expect(pool.pids).not.toContain(first[0]);
      expect(pool.pids).toContain(first[1]);
      await allSucceed("after", 20);

      const last = pool.pids;
      await runtime.stop();
      stopped = true;
      expect(pool.pids).toEqual([]);
      for (const pid of last) expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      if (!stopped) await runtime.stop();
    }
  });

  it("acts on a stop that arrives while the workers boot, without waiting for the kill timeout", async () => {
    // A kill timeout longer than the test's: only a worker that acts on the stop ends in time.
    const runtime = twoWorkers({ pollers: 1, maxInFlight: 10 }, { stopTimeoutMs: 600_000 });
    const pool = runtime.pool!;
    const started = pool.pids;
    expect(started).toHaveLength(2);
    // Act: stopped at once, while each worker is still loading its modules.
    await runtime.stop();
    // Assess: every worker ended by itself, and a stop during the start is not a failed start
    // (npm start would report "could not start: worker process 0 exited before it was ready").
    await expect(runtime.ready).resolves.toBeUndefined();
    expect(pool.pids).toEqual([]);
    for (const pid of started) expect(() => process.kill(pid, 0)).toThrow();
  });

  it("ends a worker whose runtime was killed with SIGKILL while the worker still loaded its modules", async () => {
    // Prepare: a stand-in for the runtime forks worker-main as the pool does, prints its pid and
    // kills itself at once, so the IPC channel closes before the worker has listened for anything.
    const WORKER_MAIN = fileURLToPath(new URL("../../shared/local/worker-main.ts", import.meta.url));
    const args = encodeMainArgs({ handlersModule: HANDLERS, pollers: 1, maxInFlight: 10 });
    const log = join(await mkdtemp(join(tmpdir(), "hg-orphan-")), "worker.log");
    const runtime = spawn(
      process.execPath,
      [
        "-e",
        `const fd = require("node:fs").openSync(${JSON.stringify(log)}, "w");
        const c = require("node:child_process").fork(${JSON.stringify(WORKER_MAIN)}, ${JSON.stringify(args)},
          { detached: true, execArgv: ["--import", "tsx"], stdio: ["ignore", fd, fd, "ipc"] });
        process.stdout.write(String(c.pid), () => process.kill(process.pid, "SIGKILL"));`,
      ],
      { env: envOf(hg), stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    runtime.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    await new Promise((done) => runtime.once("exit", done));
    const pid = Number(out);
    expect(pid).toBeGreaterThan(0);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      // Assess: the worker, once built, sees that its runtime is gone and stops (not a crash on its
      // "ready" to a closed channel, which drops the poll in flight); it never polls on.
      await eventually(async () => (alive() ? undefined : true), 40_000, "the orphaned worker to end");
      const output = await readFile(log, "utf8");
      expect(output).not.toContain("ERR_IPC_CHANNEL_CLOSED");
      expect(output).not.toContain("Error");
    } finally {
      if (alive()) process.kill(pid, "SIGKILL");
    }
  });
});
