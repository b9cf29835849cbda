/**
 * A whole Hourglass process for kill -9 tests (test/integration/flow-crash.test.ts): the
 * dispatcher loop and the queue worker, on the config in its environment, with a `test.flow`
 * handler that records each start in a Redis list (`FLOW_RUNS_KEY`) and works `workMs`.
 * It prints "ready" once running; the test then kills it with SIGKILL whenever it likes.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { loadConfig } from "../../shared/config.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { createHourglass } from "../../shared/hourglass.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { silentLogger } from "../../shared/logger.ts";

const runsKey = process.env.FLOW_RUNS_KEY!;
const hourglass = await createHourglass({
  config: loadConfig(process.env),
  logger: silentLogger,
  handlers: [
    defineHandler(
      "test.flow",
      z.object({ workMs: z.number().int().optional() }),
      async (payload, context) => {
        await hourglass.redis.rpush(
          runsKey,
          JSON.stringify({
            id: context.id,
            runAt: context.runAt.getTime(),
            start: Date.now(),
            pid: process.pid,
          }),
        );
        await sleep(payload.workMs ?? 0);
      },
    ),
  ],
});
startRuntime(hourglass, { tickMs: 100 });
process.stdout.write("ready\n");
