import { randomBytes } from "node:crypto";
import { type AwsShaped, REGION, startAwsShaped } from "../scripts/aws-shaped/harness.ts";
import { HourglassClient } from "../shared/client/client.ts";
import {
  privateAddress,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../test/support/webhook-receiver.ts";
import { type Lateness, lateness, sleep } from "./stats.ts";

export interface AwsShapedResult {
  readonly lateness: Lateness;
  readonly events: number;
  readonly delivered: number;
  /** Deliveries beyond the first of one event (at-least-once shows here). */
  readonly duplicates: number;
  /** First delivery to last, ms. */
  readonly drainMs: number;
  readonly workerEnvironments: number;
  readonly coldStarts: number;
}

export interface AwsShapedBench {
  readonly running: AwsShaped;
  readonly receiver: WebhookReceiver;
  readonly client: HourglassClient;
  stop(): Promise<void>;
}

/**
 * The synthesized stack in the AWS-shaped mode with AWS latencies (`--latency aws`), the template's
 * cadence (the dispatcher once a minute, a 120 s look-ahead), and the worker at the template's
 * maximum concurrency (50 execution environments on this machine).
 */
export async function startAwsShapedBench(profile: "standard" | "lean"): Promise<AwsShapedBench> {
  const receiver = await startWebhookReceiver(privateAddress());
  const running = await startAwsShaped({
    profile,
    latency: "aws",
    stackName: `bench-${profile}-${randomBytes(3).toString("hex")}`,
    context: { webhookAllowPrivate: "true" },
    dataDir: ".hourglass/bench/aws-shaped",
    ...(process.env.AWS_ENDPOINT_URL_DYNAMODB && { dynamoEndpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }),
    ...(process.env.AWS_ENDPOINT_URL_SQS && { sqsEndpoint: process.env.AWS_ENDPOINT_URL_SQS }),
    maxEnvironments: { api: 4, dispatcher: 1, worker: 50 },
    log: (line) => console.error(`[aws-shaped] ${line}`),
  });
  const client = new HourglassClient({ url: running.url, sigv4: { region: REGION }, retries: 2 });
  return {
    running,
    receiver,
    client,
    stop: async () => {
      await running.stop();
      await receiver.close();
    },
  };
}

/** Creates `perSecond` webhooks each second for `seconds`, each `aheadMs` ahead, and waits for them all. */
export async function awsSteady(
  bench: AwsShapedBench,
  label: string,
  perSecond: number,
  seconds: number,
  aheadMs: number,
): Promise<AwsShapedResult> {
  const path = `/${label}-${randomBytes(3).toString("hex")}`;
  const runAts = new Map<string, number>();
  const started = Date.now();
  for (let s = 0; s < seconds; s++) {
    const tickAt = started + s * 1000;
    await sleep(Math.max(0, tickAt - Date.now()));
    const runAt = Date.now() + aheadMs;
    const created = await bench.client.scheduleBatch(
      Array.from({ length: perSecond }, (_, i) => ({
        type: "webhook",
        runAt: new Date(runAt + (i * 1000) / perSecond).toISOString(),
        payload: { url: bench.receiver.url(path) },
      })),
    );
    for (const item of created.results)
      if (item.event) runAts.set(item.event.id, Date.parse(item.event.runAt));
  }
  return collect(bench, path, runAts, aheadMs + 120_000);
}

/** `n` webhooks due in the same second, `aheadMs` from now: through the dispatcher's tick when beyond the look-ahead. */
export async function awsBurst(bench: AwsShapedBench, n: number, aheadMs: number): Promise<AwsShapedResult> {
  const path = `/burst-${randomBytes(3).toString("hex")}`;
  const runAt = Date.now() + aheadMs;
  const runAts = new Map<string, number>();
  for (let i = 0; i < n; i += 500) {
    const created = await bench.client.scheduleBatch(
      Array.from({ length: Math.min(500, n - i) }, () => ({
        type: "webhook",
        runAt: new Date(runAt).toISOString(),
        payload: { url: bench.receiver.url(path) },
      })),
    );
    for (const item of created.results)
      if (item.event) runAts.set(item.event.id, Date.parse(item.event.runAt));
  }
  if (Date.now() > runAt) console.error(`[aws-shaped] creating the burst took past its due time`);
  return collect(bench, path, runAts, aheadMs + 600_000);
}

async function collect(
  bench: AwsShapedBench,
  path: string,
  runAts: ReadonlyMap<string, number>,
  timeoutMs: number,
): Promise<AwsShapedResult> {
  const deadline = Date.now() + timeoutMs;
  const firstOf = () => {
    const first = new Map<string, number>();
    for (const d of bench.receiver.of(path)) if (!first.has(d.eventId)) first.set(d.eventId, d.at);
    return first;
  };
  while (firstOf().size < runAts.size && Date.now() < deadline) await sleep(1_000);
  const first = firstOf();
  const samples = [...first].map(([id, at]) => ({ runAt: runAts.get(id) ?? at, startedAt: at }));
  const times = samples.map((s) => s.startedAt);
  const worker = bench.running.functions.worker!.stats();
  return {
    lateness: lateness(samples),
    events: runAts.size,
    delivered: first.size,
    duplicates: bench.receiver.of(path).length - first.size,
    drainMs: times.length ? Math.max(...times) - Math.min(...times) : 0,
    workerEnvironments: worker.environments,
    coldStarts: worker.coldStarts,
  };
}
