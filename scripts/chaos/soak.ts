import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { Redis } from "ioredis";
import { loadConfig } from "../../shared/config.ts";
import { ensureQueue, provision } from "../../shared/local/provision.ts";
import { WORK_QUEUE } from "../../shared/resources.ts";
import { freePorts } from "../../test/support/redis-servers.ts";
import { type CheckReport, check } from "./checker.ts";
import { ChaosClient } from "./client.ts";
import { type FaultKind, HistoryWriter } from "./history.ts";
import { journalSnapshot } from "./journal-snapshot.ts";
import { type FaultStep, makePlan, type Plan, type Profile } from "./plan.ts";
import { Receiver } from "./receiver.ts";
import {
  dynamoAnswers,
  dynamoDbLocal,
  type GuardedServer,
  httpAnswers,
  LOCAL_CREDENTIALS,
  NodeProcess,
  redisAnswers,
  redisServer,
  sqsAnswers,
  waitUntil,
} from "./services.ts";
import { API_TOKENS, TENANTS, type TenantName } from "./tenants.ts";

export interface SoakOptions {
  readonly seed: number;
  readonly profile: Profile;
  /** Where the history, the report and every process's log go. @default .hourglass/chaos/<seed>-<time> */
  readonly runDir?: string;
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

export interface SoakResult {
  readonly runDir: string;
  readonly plan: Plan;
  readonly report: CheckReport;
  readonly wallMs: number;
}

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = resolve(HERE, "..", "..");

/** Timings the Hourglass processes run with: short, so recovery fits inside a soak. */
const HANDLER_TIMEOUT_S = 8;
const WEBHOOK_TIMEOUT_MS = 5_000;
const HOLD_GRACE_MS = 15_000;

/**
 * Runs one soak: its own Redis, DynamoDB Local and fauxqs on free ports (the OS's ephemeral range,
 * never the shared stack's), the API, two dispatchers and the worker as four processes, each with
 * its own clock skew, the receiver and the client load of three tenants in this one, and the
 * seed's fault schedule. Then a quiet period, the final reads, a read of the whole journal, and
 * the checker over the whole history.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const began = Date.now();
  const log = options.log ?? (() => {});
  const plan = makePlan(options.seed, options.profile);
  const runDir = resolve(
    options.runDir ??
      join(ROOT, ".hourglass", "chaos", `${options.seed}-${new Date().toISOString().replace(/[:.]/g, "")}`),
  );
  mkdirSync(join(runDir, "logs"), { recursive: true });
  const history = new HistoryWriter(join(runDir, "history.jsonl"));
  // Held together while picked, so no two of them come back the same.
  const picked = (await freePorts(4)) as [number, number, number, number];
  const ports = { redis: picked[0], dynamo: picked[1], sqs: picked[2], api: picked[3] };
  const redisUrl = `redis://127.0.0.1:${ports.redis}`;
  const dynamoEndpoint = `http://127.0.0.1:${ports.dynamo}`;
  const sqsEndpoint = `http://127.0.0.1:${ports.sqs}`;
  const api = `http://127.0.0.1:${ports.api}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    HOURGLASS_MODE: "local",
    HOURGLASS_REDIS_URL: redisUrl,
    HOURGLASS_DYNAMODB_PORT: String(ports.dynamo),
    HOURGLASS_SQS_PORT: String(ports.sqs),
    HOURGLASS_DATA_DIR: runDir,
    PORT: String(ports.api),
    HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true",
    HOURGLASS_WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
    HOURGLASS_HANDLER_TIMEOUT_SECONDS: String(HANDLER_TIMEOUT_S),
    HOURGLASS_RUN_LEASE_MARGIN_MS: "2000",
    HOURGLASS_DISPATCH_LEASE_SECONDS: "5",
    HOURGLASS_RECOVERY_GRACE_SECONDS: "5",
    HOURGLASS_RECOVERY_EVERY_SECONDS: "2",
    HOURGLASS_BACKOFF_BASE_MS: "200",
    HOURGLASS_BACKOFF_MAX_MS: "2000",
    HOURGLASS_TICK_MS: "250",
    HOURGLASS_LOOKAHEAD_SECONDS: "5",
    HOURGLASS_SHARDS: "8",
    HOURGLASS_SHARD_GROUPS: "2",
    HOURGLASS_API_TOKENS: API_TOKENS,
    LOG_LEVEL: "WARN",
  };
  const config = loadConfig(env);

  let stopping = false;
  const skewIndex = { api: 0, dispatcher: 0, worker: 0 };
  const exits: string[] = [];
  const servers: GuardedServer[] = [];
  const redis = redisServer(ports.redis, runDir);
  const dynamo = dynamoDbLocal(ports.dynamo, runDir, join(ROOT, ".hourglass", "cache"));
  servers.push(redis, dynamo);
  const tsx = ["--import", "tsx"];
  const roleArgs = (role: string) => () => {
    const own = { ...env };
    const args = [...tsx];
    // Every role's clock is off by its own amount, so API, dispatchers and worker disagree.
    const skews = role === "worker" ? plan.skews : role === "api" ? plan.apiSkews : plan.dispatcherSkews;
    const r = role as keyof typeof skewIndex;
    const skew = skews[skewIndex[r]++ % skews.length]!;
    own.CHAOS_CLOCK_SKEW_MS = String(skew);
    args.push("--import", join(HERE, "skew.mjs"));
    const at = Date.now();
    history.write({ kind: "fault", fault: `${r}-skew`, at, endAt: at, detail: `${skew} ms` });
    return { args: [...args, join(HERE, "role.ts"), role], env: own };
  };
  // A part that dies on its own (a crash, a failed start while a server is down) is started again.
  const supervised = (name: string, args: () => { args: string[]; env: NodeJS.ProcessEnv }) => {
    const p: NodeProcess = new NodeProcess(
      name,
      args,
      join(runDir, "logs", `${name}.log`),
      (code, signal, expected) => {
        history.write({ kind: "exit", process: name, at: Date.now(), code, signal, expected });
        if (expected || stopping) return;
        exits.push(`${name} exited (${code ?? signal})`);
        setTimeout(() => {
          if (!stopping && !p.running) p.start();
        }, 1_000).unref();
      },
    );
    return p;
  };
  const fauxqs = supervised("fauxqs", () => ({
    args: [join(HERE, "fauxqs-server.mjs"), String(ports.sqs)],
    env,
  }));
  const roles = {
    api: supervised("api", roleArgs("api")),
    dispatcher: supervised("dispatcher", roleArgs("dispatcher")),
    // A second dispatcher, as two overlapping EventBridge invocations would be: two materializers
    // and two claimers at once (only the first is killed by the faults).
    "dispatcher-2": supervised("dispatcher-2", roleArgs("dispatcher")),
    worker: supervised("worker", roleArgs("worker")),
  };
  const receiver = new Receiver(history, WEBHOOK_TIMEOUT_MS + 2_000);
  const dynamoClient = new DynamoDBClient({
    endpoint: dynamoEndpoint,
    region: "us-east-1",
    credentials: LOCAL_CREDENTIALS,
  });
  const sqsClient = new SQSClient({
    endpoint: sqsEndpoint,
    region: "us-east-1",
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  const admin = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  admin.on("error", () => {});

  const teardown = async () => {
    stopping = true;
    redis.signal("SIGCONT");
    await Promise.all(Object.values(roles).map((r) => r.stop()));
    await receiver.stop();
    await fauxqs.stop();
    admin.disconnect();
    dynamoClient.destroy();
    sqsClient.destroy();
    for (const s of servers) await s.stop();
  };

  try {
    log(`run dir ${runDir}`);
    await redis.start();
    await dynamo.start();
    fauxqs.start();
    await waitUntil("redis", () => redisAnswers(redisUrl), 15_000);
    await waitUntil("sqs", () => sqsAnswers(sqsEndpoint), 30_000);
    await waitUntil("dynamodb", () => dynamoAnswers(dynamoEndpoint), 90_000);
    await admin.connect();
    await provision({ dynamo: dynamoClient, sqs: sqsClient, config });
    const receiverUrl = await receiver.start();
    roles.api.start();
    roles.dispatcher.start();
    roles["dispatcher-2"].start();
    roles.worker.start();
    await waitUntil("api", () => httpAnswers(`${api}/health`), 120_000);
    for (const name of Object.keys(TENANTS) as TenantName[]) {
      const response = await fetch(`${api}/v1/webhook-secret`, {
        headers: { authorization: `Bearer ${TENANTS[name].token}` },
      });
      receiver.useSecret(name, ((await response.json()) as { secret: string }).secret);
    }
    // The load starts once every part is up, so the first fault does not kill a process mid-boot.
    await waitUntil(
      "dispatcher and worker",
      async () => roles.dispatcher.ready && roles["dispatcher-2"].ready && roles.worker.ready,
      120_000,
    );
    log(`stack up in ${Math.round((Date.now() - began) / 1000)} s; load for ${plan.profile.loadMs / 1000} s`);

    const client = new ChaosClient(api, receiverUrl, history);
    const startedAt = Date.now();
    const loadEndsAt = startedAt + plan.profile.loadMs;
    history.write({
      kind: "meta",
      seed: plan.seed,
      profile: plan.profile.name,
      startedAt,
      holdGraceMs: HOLD_GRACE_MS,
      loadEndsAt: loadEndsAt + 2_000,
      bounds: {
        noisyFrom: startedAt + plan.profile.tenants.noisyFromMs,
        tickMs: config.tickMs,
        // A dead dispatcher's lease expires, then the recovery sweep comes by after its grace.
        recoveryMs: (5 + 5 + 2) * 1_000,
        lookAheadMs: 5_000,
      },
    });
    history.write({ kind: "phase", phase: "load", at: startedAt });

    const inject = async (step: FaultStep) => {
      const at = Date.now();
      let detail: string | undefined;
      switch (step.kind) {
        case "kill-api":
        case "kill-dispatcher":
        case "kill-worker": {
          const role = roles[step.kind.slice(5) as keyof typeof roles];
          detail = `pid ${role.pid}, down ${step.durationMs} ms`;
          await role.kill();
          await sleep(step.durationMs);
          if (!role.running) role.start();
          break;
        }
        case "redis-stop":
          detail = `${step.durationMs} ms`;
          redis.signal("SIGSTOP");
          await sleep(step.durationMs);
          redis.signal("SIGCONT");
          break;
        case "redis-flushall":
          await admin.flushall().catch((error: Error) => {
            detail = `failed: ${error.message}`;
          });
          break;
        case "sqs-restart":
          detail = `down ${step.durationMs} ms`;
          await fauxqs.kill();
          await sleep(step.durationMs);
          fauxqs.start();
          await waitUntil("sqs", () => sqsAnswers(sqsEndpoint), 30_000);
          await ensureQueue(sqsClient, config.queue.name, WORK_QUEUE);
          break;
        case "dynamodb-restart":
          await dynamo.stop();
          await dynamo.start();
          await waitUntil("dynamodb", () => dynamoAnswers(dynamoEndpoint), 90_000);
          detail = `back after ${Date.now() - at} ms`;
          break;
      }
      history.write({ kind: "fault", fault: step.kind as FaultKind, at, endAt: Date.now(), detail });
      log(`fault ${step.kind}${detail ? ` (${detail})` : ""}`);
    };
    // Faults of one server or process run one after another; faults of different ones may
    // overlap (a slow DynamoDB Local restart does not hold back a kill of the worker).
    const chains = new Map<string, Promise<void>>();
    const faults = (async () => {
      for (const step of plan.faults) {
        const wait = startedAt + step.atMs - Date.now();
        if (wait > 0) await sleep(wait);
        if (Date.now() > loadEndsAt) break;
        const target = step.kind === "redis-flushall" ? "redis-stop" : step.kind;
        chains.set(
          target,
          (chains.get(target) ?? Promise.resolve()).then(() =>
            Date.now() > loadEndsAt ? undefined : inject(step),
          ),
        );
      }
      await Promise.all(chains.values());
    })();

    await Promise.all([client.run(plan, startedAt, loadEndsAt, () => stopping), faults]);
    // Every part is up again for the quiet period.
    for (const role of Object.values(roles)) if (!role.running) role.start();
    // The noisy tenant's limits are lifted for certain (its last planned lift may have been lost), so
    // its held backlog drains in the quiet period like every other event.
    for (
      let i = 0;
      i < 30 && (await client.call({ type: "limits", limits: {} }, "noisy")).status !== 200;
      i++
    )
      await sleep(1_000);
    const quietAt = Date.now();
    history.write({ kind: "phase", phase: "quiet", at: quietAt });
    log(`load done (${plan.ops.length} planned operations); quiet period`);
    // Long enough for every hold to have expired (plus grace) and every event to settle.
    const holdsEndBy = loadEndsAt + 6_000 + HOLD_GRACE_MS;
    // Up to twice the quiet period while events are still finishing (a slow machine), never less.
    await client.settle(quietAt + plan.profile.quietMs, quietAt + 2 * plan.profile.quietMs);
    const rest = Math.min(holdsEndBy, quietAt + plan.profile.quietMs) - Date.now();
    if (rest > 0) await sleep(rest);
    history.write({ kind: "phase", phase: "final", at: Date.now() });
    const reservations = plan.ops.filter((o) => o.op.kind === "hold").length;
    await client.finalReads(reservations);
    history.write(await journalSnapshot(dynamoClient, config.tables.events));
    // A stale delivery after the final reads would still be caught by the final-is-final rule.
    await sleep(2_000);
    history.write({ kind: "phase", phase: "end", at: Date.now() });
  } finally {
    await teardown();
  }
  const report = check(history.all());
  return { runDir, plan, report, wallMs: Date.now() - began };
}
