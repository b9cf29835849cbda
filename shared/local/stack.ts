import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { ListQueuesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { dynamoDbLocalArgs, ensureDynamoDbLocalJar, ensureLoopbackLauncher } from "./dynamodb-local.ts";
import { LocalStackError } from "./errors.ts";

export interface LocalStackOptions {
  /** @default "redis://127.0.0.1:6379" */
  readonly redisUrl?: string;
  /** @default 8000 */
  readonly dynamoPort?: number;
  /** @default 4566 (LocalStack's port, so either one answers there) */
  readonly sqsPort?: number;
  /** Where data, logs and the DynamoDB Local jar live. @default ".hourglass" */
  readonly dataDir?: string;
  /** Where the DynamoDB Local jar is cached. @default ".hourglass/cache" */
  readonly cacheDir?: string;
  /** Keep data across restarts (Redis AOF, DynamoDB `-dbPath`). @default true */
  readonly persist?: boolean;
  /** Services run elsewhere (LocalStack, AWS), or not needed: neither probed nor started. */
  readonly skip?: readonly ("redis" | "dynamodb" | "sqs")[];
  /** Called with one line per service started or reused. */
  readonly log?: (line: string) => void;
}

export interface RunningStack {
  readonly redisUrl: string;
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  /** The services this call started (and `stop` will stop); the others were already running. */
  readonly started: readonly ("redis" | "dynamodb" | "sqs")[];
  stop(): Promise<void>;
}

const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

/**
 * Starts the embedded stand-ins, or reuses any already answering on the configured ports, and waits
 * until each one answers. `stop()` stops only what this call started.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<RunningStack> {
  const redisUrl = options.redisUrl ?? "redis://127.0.0.1:6379";
  const dynamoPort = options.dynamoPort ?? 8000;
  const sqsPort = options.sqsPort ?? 4566;
  const dataDir = resolve(options.dataDir ?? ".hourglass");
  const persist = options.persist ?? true;
  const log = options.log ?? (() => {});
  mkdirSync(join(dataDir, "logs"), { recursive: true });

  const stoppers: { name: "redis" | "dynamodb" | "sqs"; stop: () => Promise<void> }[] = [];
  const stopAll = async () => {
    for (const { stop } of stoppers.reverse()) await stop().catch(() => {});
  };
  try {
    const redis = new URL(redisUrl);
    const redisPort = Number(redis.port || 6379);
    if (options.skip?.includes("redis")) {
      log("redis: not needed here; not started");
    } else if (await redisAnswers(redis.hostname, redisPort)) {
      log(`redis: reusing ${redisUrl}`);
    } else {
      stoppers.push({ name: "redis", stop: await startRedis(redisPort, dataDir, persist) });
      await waitFor("redis", () => redisAnswers(redis.hostname, redisPort), 15_000, dataDir);
      log(`redis: started on port ${redisPort}${persist ? " (AOF on)" : ""}`);
    }

    const dynamoEndpoint = `http://127.0.0.1:${dynamoPort}`;
    if (options.skip?.includes("dynamodb")) {
      log("dynamodb: configured elsewhere; not started");
    } else if (await dynamoAnswers(dynamoEndpoint)) {
      log(`dynamodb: reusing ${dynamoEndpoint}`);
    } else {
      const cacheDir = resolve(options.cacheDir ?? join(".hourglass", "cache"));
      const dynamo = startDynamoDbLocal(dynamoPort, dataDir, cacheDir, persist);
      stoppers.push({ name: "dynamodb", stop: dynamo.stop });
      await waitFor("dynamodb", () => dynamoAnswers(dynamoEndpoint), 60_000, dataDir);
      log(
        dynamo.loopbackOnly
          ? `dynamodb: DynamoDB Local started on 127.0.0.1:${dynamoPort}`
          : `dynamodb: DynamoDB Local started on port ${dynamoPort} on EVERY network interface: no javac here ` +
              "to build its loopback launcher, so other hosts can read and write every table. Install a JDK " +
              "(apt-get install -y openjdk-17-jdk-headless), or firewall the port.",
      );
    }

    const sqsEndpoint = `http://127.0.0.1:${sqsPort}`;
    if (options.skip?.includes("sqs")) {
      log("sqs: configured elsewhere; not started");
    } else if (await sqsAnswers(sqsEndpoint)) {
      log(`sqs: reusing ${sqsEndpoint}`);
    } else {
      stoppers.push({ name: "sqs", stop: startFauxqs(sqsPort, dataDir) });
      await waitFor("sqs", () => sqsAnswers(sqsEndpoint), 15_000, dataDir);
      log(`sqs: fauxqs started on port ${sqsPort}`);
    }

    return {
      redisUrl,
      dynamoEndpoint,
      sqsEndpoint,
      started: stoppers.map((s) => s.name),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Points the AWS SDK at the stack unless the environment already names endpoints. */
export function useLocalEndpoints(stack: RunningStack, env: NodeJS.ProcessEnv = process.env): void {
  // AWS_ENDPOINT_URL (every service at one endpoint, as with LocalStack) wins over the stand-ins.
  if (!env.AWS_ENDPOINT_URL) {
    env.AWS_ENDPOINT_URL_DYNAMODB ??= stack.dynamoEndpoint;
    env.AWS_ENDPOINT_URL_SQS ??= stack.sqsEndpoint;
  }
  env.AWS_REGION ??= "us-east-1";
  env.AWS_ACCESS_KEY_ID ??= LOCAL_CREDENTIALS.accessKeyId;
  env.AWS_SECRET_ACCESS_KEY ??= LOCAL_CREDENTIALS.secretAccessKey;
  env.HOURGLASS_REDIS_URL ??= stack.redisUrl;
}

async function startRedis(port: number, dataDir: string, persist: boolean): Promise<() => Promise<void>> {
  if (spawnSync("redis-server", ["--version"]).error) {
    throw new LocalStackError(
      "redis",
      "redis-server is not installed. Install it with: apt-get install -y redis-server (or set HOURGLASS_REDIS_URL)",
    );
  }
  const dir = join(dataDir, "redis");
  mkdirSync(dir, { recursive: true });
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""];
  args.push("--appendonly", persist ? "yes" : "no", "--appendfsync", "everysec");
  return stopper(launch("redis-server", args, join(dataDir, "logs", "redis.log")));
}

/**
 * DynamoDB Local through its loopback launcher (shared/local/LoopbackDynamoDbLocal.java), so that
 * it listens on 127.0.0.1 only like the other stand-ins; the jar alone has no bind flag and listens
 * on every interface, which is the fallback where no JDK can compile the launcher.
 */
function startDynamoDbLocal(
  port: number,
  dataDir: string,
  cacheDir: string,
  persist: boolean,
): { stop: () => Promise<void>; loopbackOnly: boolean } {
  if (spawnSync("java", ["-version"]).error) {
    throw new LocalStackError("dynamodb", "java is not installed; DynamoDB Local needs Java 17 or newer");
  }
  const home = ensureDynamoDbLocalJar(cacheDir);
  const launcher = ensureLoopbackLauncher(home);
  const dbPath = persist ? join(dataDir, "dynamodb") : undefined;
  if (dbPath) mkdirSync(dbPath, { recursive: true });
  const args = dynamoDbLocalArgs(home, port, dbPath, launcher);
  return {
    stop: stopper(launch("java", args, join(dataDir, "logs", "dynamodb.log"))),
    loopbackOnly: launcher !== undefined,
  };
}

/**
 * fauxqs in a process of its own (`fauxqs-server.mjs`, run by this Node binary, never through npx),
 * behind the same guard as the other stand-ins. In this process it would share one event loop with
 * the API, the dispatcher and every worker that uses it: each message received, handled and deleted
 * would cost this loop the emulator's share of the work too (docs/benchmarks.md).
 */
function startFauxqs(port: number, dataDir: string): () => Promise<void> {
  return stopper(launch(process.execPath, [FAUXQS_SERVER, String(port)], join(dataDir, "logs", "sqs.log")));
}

const FAUXQS_SERVER = fileURLToPath(new URL("./fauxqs-server.mjs", import.meta.url));

/**
 * Runs a stand-in so that it ends with this process, however this process ends:
 * - In its own process group (`detached`), so the terminal's Ctrl-C, which signals the whole
 *   foreground group, does not kill Redis, DynamoDB Local or fauxqs under the clients still using them;
 *   `stop()` ends them after the clients, in order.
 * - Behind a small `sh` guard that holds the read end of a pipe from this process and ends the
 *   server when the pipe closes. The kernel closes it when this process exits for any reason,
 *   `kill -9` included, so no stand-in outlives the runtime that started it.
 */
const GUARD = '"$@" & server=$!; read -r _ || true; kill -TERM "$server" 2>/dev/null; wait "$server"';

function launch(command: string, args: string[], logFile: string): ChildProcess {
  const out = openSync(logFile, "a");
  const child = spawn("sh", ["-c", GUARD, "sh", command, ...args], {
    stdio: ["pipe", out, out],
    detached: true,
  });
  closeSync(out);
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  // The pipe must not keep this process alive, nor the guard group tie it to a terminal.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return child;
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once("exit", done));
    // Closing the pipe is the stop signal: the guard sends SIGTERM and waits for the server.
    child.stdin?.end();
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  };
}

async function waitFor(
  service: LocalStackError["service"],
  probe: () => Promise<boolean>,
  timeoutMs: number,
  dataDir: string,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(150);
  }
  throw new LocalStackError(
    service,
    `did not answer within ${timeoutMs / 1000}s; see ${join(dataDir, "logs")}/`,
  );
}

function redisAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once("error", () => finish(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => finish(data.toString().startsWith("+PONG")));
  });
}

/** True once DynamoDB (Local) at `endpoint` answers a ListTables. */
export async function dynamoAnswers(endpoint: string): Promise<boolean> {
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

/** True once the SQS endpoint answers a ListQueues. */
export async function sqsAnswers(endpoint: string): Promise<boolean> {
  const client = new SQSClient({
    endpoint,
    region: "us-east-1",
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
  try {
    await client.send(new ListQueuesCommand({ MaxResults: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}
