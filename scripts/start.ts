import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { handlers } from "../functions/handlers.ts";
import { createDynamoClient, createSqsClient } from "../shared/aws.ts";
import { ConfigError, type HourglassConfig, loadConfig } from "../shared/config.ts";
import { createHourglass, type Hourglass } from "../shared/hourglass.ts";
import { apiDeps, createApp } from "../shared/http/app.ts";
import { accessNotice } from "../shared/http/local-guard.ts";
import { LocalStackError } from "../shared/local/errors.ts";
import { provision } from "../shared/local/provision.ts";
import { type Runtime, startRuntime, workerProcesses } from "../shared/local/runtime.ts";
import { type RunningStack, startLocalStack, useLocalEndpoints } from "../shared/local/stack.ts";
import { ConsoleLogger } from "../shared/logger.ts";

/**
 * `npm start`: the embedded stack (Redis, DynamoDB Local, fauxqs, each a process of its own), then
 * the API and the dispatcher in this process, and the worker in `HOURGLASS_LOCAL_WORKERS` processes
 * of its own (one per CPU unless set; 0 runs it in this process too), each polling the work queue
 * with the handlers of functions/handlers.ts. Data lives in .hourglass/ and survives a restart.
 *
 * Order matters both ways. Configuration is validated before anything starts, so a typo leaves
 * nothing behind. On the way down the loops stop first, then the HTTP server, then the clients,
 * and only then the servers they talk to, so no client ever sees its server vanish.
 */

// The SDK warns on every start that its releases after early January 2027 need Node 22. The
// README says which Node versions are supported and why; this is the SDK's own switch for it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/** What the worker processes load: the same handlers this process registers (imported above). */
const HANDLERS_MODULE = fileURLToPath(new URL("../functions/handlers.ts", import.meta.url));

const say = (line: string) => process.stderr.write(`hourglass: ${line}\n`);

let config: HourglassConfig;
try {
  config = loadConfig(process.env, { HOURGLASS_MODE: process.env.HOURGLASS_MODE ?? "local" });
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  say(`${error.variable}: ${error.reason} (nothing was started)`);
  process.exit(2);
}

// The worker processes read the webhook master secret from the data dir, as this process did
// (shared/webhook-secret.ts): an absolute path keeps them on the same file whatever their
// working directory, so every process signs with the keys GET /v1/webhook-secret hands out.
process.env.HOURGLASS_DATA_DIR = resolve(config.local.dataDir);

const boot = new ConsoleLogger(config.logLevel);
let stack: RunningStack | undefined;
let hourglass: Hourglass | undefined;
let server: ReturnType<typeof serve> | undefined;
let runtime: Runtime | undefined;
let stopping: Promise<void> | undefined;

/** Stops whatever has started so far, in order, then exits. Safe to call more than once. */
function shutdown(reason: string, code = 0): Promise<void> {
  stopping ??= (async () => {
    await runtime?.stop();
    if (server) await closeServer(server);
    await hourglass?.close();
    await stack?.stop();
    if (code === 0) boot.info(`stopped (${reason})`);
    process.exit(code);
  })();
  return stopping;
}

process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGHUP", () => void shutdown("SIGHUP"));
// If whatever started us (npm, tsx, a shell) dies without passing a signal on, we are re-parented:
// stop then too, rather than run on unseen. Each stand-in is also tied to this process by a pipe
// (see shared/local/stack.ts), which covers this process itself being killed with SIGKILL.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void shutdown("parent exited");
}, 500).unref();

try {
  stack = await startLocalStack({
    redisUrl: config.redis.url,
    dynamoPort: config.local.dynamoPort,
    sqsPort: config.local.sqsPort,
    dataDir: config.local.dataDir,
    cacheDir: join(".hourglass", "cache"),
    skip: config.local.external,
    log: (line) => boot.info(line),
  });
  if (stopping) await stopping;
  useLocalEndpoints(stack);

  const dynamo = createDynamoClient();
  const sqs = createSqsClient();
  try {
    await provision({ dynamo, sqs, config });
  } finally {
    dynamo.destroy();
    sqs.destroy();
  }
  if (stopping) await stopping;

  hourglass = await createHourglass({ config, handlers });
  const app = createApp(apiDeps(hourglass));
  server = await listen(app.fetch, config.port);
  runtime = startRuntime(hourglass, {
    workers: workerProcesses(config.local.workers, HANDLERS_MODULE),
  });
  await runtime.ready;
  if (stopping) await stopping; // stopped while the workers booted: ready, but not running
  hourglass.logger.info(`Hourglass is running at http://127.0.0.1:${config.port}`, {
    docs: `http://127.0.0.1:${config.port}/docs`,
    dashboard: `http://127.0.0.1:${config.port}/dashboard`,
    tickMs: config.tickMs,
    workers: config.local.workers,
    lookAheadMs: config.lookAheadMs,
  });
  hourglass.logger.warn(accessNotice(config));
} catch (error) {
  // One line that says what failed, not a stack: the causes here are the machine's (a missing
  // package, a port taken, a service that did not come up), and the message names the fix.
  const known = error instanceof LocalStackError || error instanceof ConfigError;
  say(`could not start: ${known ? error.message : describe(error)}`);
  await shutdown("startup failed", 1);
}

function listen(fetch: Parameters<typeof serve>[0]["fetch"], port: number) {
  return new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch, port, hostname: "127.0.0.1" }, () => resolve(s));
    s.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new ConfigError("PORT", `${port} is already in use; set PORT to a free port`)
          : error,
      ),
    );
  });
}

/** Stops accepting, lets requests in flight finish for a few seconds, then closes what is left. */
async function closeServer(s: ReturnType<typeof serve>): Promise<void> {
  const closed = new Promise<void>((done) => s.close(() => done()));
  if ("closeIdleConnections" in s) s.closeIdleConnections();
  const timer = setTimeout(() => {
    if ("closeAllConnections" in s) s.closeAllConnections();
  }, 5_000);
  await closed;
  clearTimeout(timer);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
