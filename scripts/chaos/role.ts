import { setTimeout as sleep } from "node:timers/promises";
import { serve } from "@hono/node-server";
import { handlers } from "../../functions/handlers.ts";
import { loadConfig } from "../../shared/config.ts";
import { createSqsBatchHandler } from "../../shared/events/sqs-batch.ts";
import { createHourglass } from "../../shared/hourglass.ts";
import { apiDeps, createApp } from "../../shared/http/app.ts";
import { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";
import { QueuePoller } from "../../shared/local/poller.ts";

/**
 * One Hourglass part as its own process, so the soak can kill each alone: `api` (the HTTP API on
 * PORT), `dispatcher` (a tick every HOURGLASS_TICK_MS, as EventBridge Scheduler would invoke it)
 * or `worker` (the SQS consumer Lambda's event source plays). Endpoints come from the usual
 * variables (HOURGLASS_REDIS_URL, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS); the tables and
 * the queue must exist already (the soak provisions them).
 */
const role = process.argv[2];
if (role !== "api" && role !== "dispatcher" && role !== "worker") {
  process.stderr.write("usage: role.ts api|dispatcher|worker\n");
  process.exit(2);
}
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const config = loadConfig(process.env, { HOURGLASS_MODE: "local" });
const hourglass = await createHourglass({ config, handlers, service: `hourglass-${role}` });
let running = true;
const stops: (() => Promise<void>)[] = [];

if (role === "api") {
  const app = createApp(apiDeps(hourglass));
  const server = serve({ fetch: app.fetch, port: config.port, hostname: "127.0.0.1" });
  stops.push(() => new Promise<void>((done) => server.close(() => done())));
} else if (role === "dispatcher") {
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      try {
        await hourglass.dispatcher.tick(config.tickMs);
      } catch (error) {
        hourglass.logger.error("dispatcher tick failed", { error });
      }
      const rest = config.tickMs - (Date.now() - started);
      if (rest > 0 && running) await sleep(rest);
    }
  })();
  stops.push(() => loop);
} else {
  const poller = new QueuePoller(
    hourglass.sqs,
    hourglass.queueUrl!,
    createSqsBatchHandler(hourglass.worker, hourglass.logger),
    hourglass.logger,
    4,
    500,
    undefined,
    // As npm start's workers run (with the soak's short run lease nothing waits; see the gate).
    TrailingOutcomes.for(hourglass.worker, config.local.outcomeTrailMs, 500),
    hourglass.worker,
    config.eventsPerMessage,
  );
  poller.start();
  stops.push(() => poller.stop());
}
process.stdout.write(`${role} ready\n`);

async function stop(): Promise<void> {
  running = false;
  await Promise.all(stops.map((s) => s()));
  await hourglass.close();
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
// Orphaned (the soak died): end too, rather than run on against servers that are going away.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 500).unref();
