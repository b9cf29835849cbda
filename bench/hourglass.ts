import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import pMap from "p-map";
import { z } from "zod";
import { createDynamoClient, createSqsClient } from "../shared/aws.ts";
import { loadConfig } from "../shared/config.ts";
import { defineHandler } from "../shared/handlers/registry.ts";
import { createHourglass, type Hourglass } from "../shared/hourglass.ts";
import { provision } from "../shared/local/provision.ts";
import { LOCAL_MAX_IN_FLIGHT, LOCAL_POLLERS, startRuntime } from "../shared/local/runtime.ts";
import type { WorkerPoolOptions } from "../shared/local/worker-pool.ts";
import { silentLogger } from "../shared/logger.ts";
import type { DispatchMessage } from "../shared/model/message.ts";
import { InProcessTransport } from "../shared/transport/memory.ts";
import type { Transport } from "../shared/transport/transport.ts";
import { lateness, payloadOf, sleep, until } from "./stats.ts";

export const noop = defineHandler("bench.noop", z.object({ data: z.string() }), async () => {});

export interface Sample {
  runAt: number;
  startedAt: number;
  /** `tenant/id`, so recurring occurrences can be told from one-off events. */
  member?: string;
}

export type Mode = "engine" | "full";

/**
 * One Hourglass for the benchmark. `engine`: Redis index only, journal off, an in-process transport
 * straight into the worker. `full`: the real local stack (DynamoDB Local journal, fauxqs queue,
 * the same runtime `npm start` uses).
 */
export async function benchHourglass(
  mode: Mode,
  redisUrl: string,
  options: {
    clock?: () => number;
    transport?: () => Transport;
    env?: Record<string, string>;
    /** Another process's instance (same key prefix, tables and queue): `bench/consumer.ts`. */
    name?: string;
  } = {},
) {
  const name = options.name ?? `b${randomBytes(3).toString("hex")}`;
  const env = benchEnv(mode, redisUrl, name, options.env);
  const config = loadConfig(process.env, env);
  if (mode === "full") {
    await provision({
      dynamo: createDynamoClient(),
      sqs: createSqsClient(),
      config: config,
    });
  }
  const samples: Sample[] = [];
  let hourglass: Hourglass | undefined;
  const pending = new Set<Promise<unknown>>();
  const inProcess = (): Transport =>
    new InProcessTransport((message: DispatchMessage) => {
      const work = hourglass!.worker.process(message).finally(() => pending.delete(work));
      pending.add(work);
    });
  hourglass = await createHourglass({
    config,
    logger: silentLogger,
    handlers: [noop],
    ...(mode === "engine" && { transport: options.transport ?? inProcess }),
    ...(options.clock && { clock: options.clock }),
    workerHooks: { onStart: sampleStart(samples) },
  });
  /**
   * `npm start`'s layout: the worker in `count` processes of their own (`bench/consumer.ts`), on
   * this instance's queue, tables and keys; their handler starts land in `samples`.
   */
  const workers = (
    count: number,
    consumer: { pollers: number; maxInFlight: number },
    /** Each SQS and DynamoDB call a worker made: [name, epoch ms, items]. */
    onCalls?: (calls: [string, number, number][]) => void,
  ): WorkerPoolOptions => ({
    count,
    entry: CONSUMER,
    args: [String(consumer.pollers), String(consumer.maxInFlight)],
    env: { ...process.env, ...env },
    onMessage: (message) => {
      const report = message as { samples?: Sample[]; calls?: [string, number, number][] };
      if (report.samples) samples.push(...report.samples);
      if (report.calls) onCalls?.(report.calls);
    },
  });
  return { hourglass, samples, name, env, workers };
}

const CONSUMER = fileURLToPath(new URL("./consumer.ts", import.meta.url));

/** Records a handler start for the lateness figures. */
export function sampleStart(samples: Sample[]) {
  return (message: DispatchMessage, startedAt: number) =>
    samples.push({ runAt: message.runAt, startedAt, member: message.member });
}

/** The settings of one benchmark instance, as environment variables (a worker process gets them too). */
function benchEnv(mode: Mode, redisUrl: string, name: string, extra: Record<string, string> = {}) {
  return {
    HOURGLASS_MODE: "local",
    HOURGLASS_REDIS_URL: redisUrl,
    HOURGLASS_KEY_PREFIX: name,
    HOURGLASS_JOURNAL: mode === "full" ? "true" : "false",
    HOURGLASS_EVENTS_TABLE: `${name}-events`,
    HOURGLASS_LEASES_TABLE: `${name}-leases`,
    HOURGLASS_LEDGER_TABLE: `${name}-ledger`,
    HOURGLASS_SCHEDULES_TABLE: `${name}-schedules`,
    HOURGLASS_QUEUE_NAME: `${name}-work`,
    HOURGLASS_CLAIM_BATCH: "1000",
    LOG_LEVEL: "SILENT",
    ...extra,
  };
}

export async function enqueueBatch(
  hourglass: Hourglass,
  n: number,
  payloadBytes: number,
  chunk: number,
  delayMs: number,
) {
  const payload = payloadOf(payloadBytes);
  const started = performance.now();
  for (let i = 0; i < n; i += chunk) {
    const results = await hourglass.events.scheduleBatch(
      "bench",
      Array.from({ length: Math.min(chunk, n - i) }, () => ({
        type: "bench.noop",
        payload,
        delaySeconds: delayMs / 1000,
      })),
    );
    const failed = results.find((r) => !r.ok);
    if (failed && !failed.ok) throw failed.error;
  }
  return n / ((performance.now() - started) / 1000);
}

export async function enqueueSingle(hourglass: Hourglass, n: number, payloadBytes: number, inFlight: number) {
  const payload = payloadOf(payloadBytes);
  const started = performance.now();
  await pMap(
    Array.from({ length: n }),
    () => hourglass.events.schedule("bench", { type: "bench.noop", payload, delaySeconds: 86_400 }),
    { concurrency: inFlight },
  );
  return n / ((performance.now() - started) / 1000);
}

/**
 * `n` events all due at the same instant, `leadMs` from now; lateness of every start. `workers`:
 * the full stack's worker in that many processes of its own, as `npm start` runs it (0: in this one).
 */
export async function burst(mode: Mode, redisUrl: string, n: number, leadMs: number, workerCount = 0) {
  const { hourglass, samples, workers } = await benchHourglass(mode, redisUrl);
  // As many messages in flight as the burst holds: what Lambda's scale-out gives the SQS event source.
  const consumer = { pollers: 16, maxInFlight: n };
  const runtime = startRuntime(hourglass, {
    ...consumer,
    ...(mode === "full" && workerCount > 0 && { workers: workers(workerCount, consumer) }),
  });
  await runtime.ready;
  const dueAt = Date.now() + leadMs;
  const payload = payloadOf(100);
  const chunk = 500;
  for (let i = 0; i < n; i += chunk) {
    await hourglass.events.scheduleBatch(
      "bench",
      Array.from({ length: Math.min(chunk, n - i) }, () => ({
        type: "bench.noop",
        payload,
        runAt: new Date(dueAt).toISOString(),
      })),
    );
  }
  const enqueueLateMs = Math.max(0, Date.now() - dueAt);
  const complete = await until(() => samples.length >= n, 180_000);
  await runtime.stop();
  await hourglass.close();
  return { ...lateness(samples), enqueueLateMs, complete };
}

/** `perSecond` events a second for `seconds`, each scheduled `aheadMs` before it is due. */
export async function steady(
  mode: Mode,
  redisUrl: string,
  perSecond: number,
  seconds: number,
  aheadMs: number,
  options: {
    /** Settings for this run only (as the environment would give them). */
    env?: Record<string, string>;
    /** Reads what the run left (counters, stats) before the instance closes. */
    beforeClose?: (hourglass: Hourglass) => Promise<void>;
    /** The full stack's worker processes, as `npm start` runs them (0: in this process). */
    workers?: number;
  } = {},
) {
  const { hourglass, samples, workers } = await benchHourglass(
    mode,
    redisUrl,
    options.env ? { env: options.env } : {},
  );
  const runtime = startRuntime(hourglass, {
    ...(mode === "full" &&
      options.workers && {
        workers: workers(options.workers, { pollers: LOCAL_POLLERS, maxInFlight: LOCAL_MAX_IN_FLIGHT }),
      }),
  });
  await runtime.ready;
  const total = perSecond * seconds;
  const payload = payloadOf(100);
  const started = Date.now();
  for (let i = 0; i < total; i++) {
    const wait = started + (i * 1000) / perSecond - Date.now();
    if (wait > 0) await sleep(wait);
    await hourglass.events.schedule("bench", { type: "bench.noop", payload, delaySeconds: aheadMs / 1000 });
  }
  await until(() => samples.length >= total, aheadMs + 30_000);
  await runtime.stop();
  await options.beforeClose?.(hourglass);
  await hourglass.close();
  return lateness(samples);
}

/** Claim + send throughput of the dispatcher alone: `n` events become due at once, sends are counted. */
export async function dispatchThroughput(redisUrl: string, n: number) {
  let offset = 0;
  let sent = 0;
  const counting: Transport = {
    async send(messages) {
      sent += messages.length;
      return { sent: messages.length, failed: [] };
    },
  };
  const { hourglass } = await benchHourglass("engine", redisUrl, {
    clock: () => Date.now() + offset,
    transport: () => counting,
    // No pacing: nothing here ever finishes, so a budget of events handed out and unfinished
    // fills at 1,000 a shard and the rest wait for the dispatch leases to run out (30 s), which
    // measured the lease, not the claims (500/s).
    env: { HOURGLASS_SHARD_IN_FLIGHT: "0" },
  });
  await enqueueBatch(hourglass, n, 100, 1_000, 60_000);
  offset = 120_000;
  const started = performance.now();
  while (sent < n) await hourglass.dispatcher.tick(10_000);
  const perSecond = n / ((performance.now() - started) / 1000);
  await hourglass.close();
  return perSecond;
}

/**
 * Fairness (issue 11): `big` events of one tenant and `small` of another, all due at the same
 * instant, engine only (Redis index, in-process transport, journal off). The small tenant's events
 * are created last. Lateness of each tenant's starts.
 */
export async function fairness(redisUrl: string, big: number, small: number, leadMs: number) {
  const { hourglass, samples } = await benchHourglass("engine", redisUrl);
  const runtime = startRuntime(hourglass, { tickMs: 100 });
  const dueAt = Date.now() + leadMs;
  const payload = payloadOf(100);
  const enqueue = async (tenant: string, n: number) => {
    for (let i = 0; i < n; i += 500) {
      await hourglass.events.scheduleBatch(
        tenant,
        Array.from({ length: Math.min(500, n - i) }, () => ({
          type: "bench.noop",
          payload,
          runAt: new Date(dueAt).toISOString(),
        })),
      );
    }
  };
  await enqueue("big", big);
  await enqueue("small", small);
  // Negative when the enqueue itself ran past the due time (a loaded machine): then part of the
  // lateness is the enqueue's, not the dispatch's.
  const slackMs = dueAt - Date.now();
  const complete = await until(() => samples.length >= big + small, 300_000);
  await runtime.stop();
  await hourglass.close();
  const of = (tenant: string) => samples.filter((s) => s.member?.startsWith(`${tenant}/`));
  // Samples are pushed as handlers start: how many of the big tenant's started before the small one's last.
  const lastSmall = samples.findLastIndex((s) => s.member?.startsWith("small/"));
  const bigBefore = samples.slice(0, lastSmall).filter((s) => s.member?.startsWith("big/")).length;
  return { small: lateness(of("small")), big: lateness(of("big")), complete, bigBefore, slackMs };
}
