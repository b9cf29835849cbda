/**
 * A whole Hourglass process for kill -9 tests (test/integration/flow-crash.test.ts,
 * bundle-crash.test.ts, started by `startFlowChild`): the dispatcher loop and the queue worker, on
 * the config in its environment, with a `test.flow` handler that records each start in a Redis
 * list (`FLOW_RUNS_KEY`) and works `workMs`. It prints "ready" once running; the test then kills
 * it with SIGKILL whenever it likes.
 */
import { loadConfig } from "../../shared/config.ts";
import { createHourglass } from "../../shared/hourglass.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { silentLogger } from "../../shared/logger.ts";
import { flowHandler } from "./flow-child-process.ts";

const runsKey = process.env.FLOW_RUNS_KEY!;
const hourglass = await createHourglass({
  config: loadConfig(process.env),
  logger: silentLogger,
  handlers: [flowHandler(() => ({ redis: hourglass.redis, runsKey }), { work: true })],
});
startRuntime(hourglass, { tickMs: 100 });
process.stdout.write("ready\n");
