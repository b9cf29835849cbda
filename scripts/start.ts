import { serve } from "@hono/node-server";
import { handlers } from "../functions/handlers.ts";
import { createDynamoClient, createSqsClient } from "../shared/aws.ts";
import { loadConfig } from "../shared/config.ts";
import { createHourglass } from "../shared/hourglass.ts";
import { apiDeps, createApp } from "../shared/http/app.ts";
import { provision } from "../shared/local/provision.ts";
import { startRuntime } from "../shared/local/runtime.ts";
import { startLocalStack, useLocalEndpoints } from "../shared/local/stack.ts";
import { ConsoleLogger } from "../shared/logger.ts";

/**
 * `npm start`: the embedded stack (Redis, DynamoDB Local, fauxqs), then the API, the dispatcher
 * and the worker in this one process. Data lives in .hourglass/ and survives a restart.
 */
const boot = new ConsoleLogger("INFO");
const stack = await startLocalStack({ log: (line) => boot.info(line) });
useLocalEndpoints(stack);
const config = loadConfig(process.env, { HOURGLASS_MODE: process.env.HOURGLASS_MODE ?? "local" });

const dynamo = createDynamoClient();
const sqs = createSqsClient();
await provision({
  dynamo,
  sqs,
  config: config,
});
dynamo.destroy();
sqs.destroy();

const hourglass = await createHourglass({ config, handlers });
const app = createApp(apiDeps(hourglass));
const server = serve({ fetch: app.fetch, port: config.port, hostname: "127.0.0.1" });
const runtime = startRuntime(hourglass);
hourglass.logger.info(`Hourglass is running at http://127.0.0.1:${config.port}`, {
  docs: `http://127.0.0.1:${config.port}/docs`,
  dashboard: `http://127.0.0.1:${config.port}/dashboard`,
  tickMs: config.tickMs,
  lookAheadMs: config.lookAheadMs,
});

let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  hourglass.logger.info("stopping", { signal });
  await runtime.stop();
  await new Promise((done) => server.close(done));
  await hourglass.close();
  await stack.stop();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
