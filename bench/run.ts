import { loadavg } from "node:os";
import { Command, Option } from "commander";
import { Redis } from "ioredis";
import { loadConfig } from "../shared/config.ts";
import { awsBurst, awsSteady, startAwsShapedBench } from "./aws-shaped.ts";
import { BullPeer } from "./bullmq.ts";
import { conditionalUpdates, hotHolds } from "./holds.ts";
import { httpHotHolds } from "./holds-http.ts";
import { journalBytesPerEvent, rebuildAfterFlush } from "./horizon.ts";
import {
  benchHourglass,
  burst,
  dispatchThroughput,
  enqueueBatch,
  enqueueSingle,
  fairness,
  steady,
} from "./hourglass.ts";
import { httpBatchEnqueue } from "./http-enqueue.ts";
import { notificationOverhead } from "./notifications.ts";
import { type FauxqsPlacement, startBenchStack } from "./stack.ts";
import type { Lateness } from "./stats.ts";
import { bullWebhooks, hourglassWebhooks } from "./webhooks.ts";

/** Groups of rows, each run with its peer; `--only` picks some. */
const GROUPS = [
  "enqueue",
  "memory",
  "dispatch",
  "engine",
  "fairness",
  "full",
  "holds",
  "http",
  "webhooks",
  "aws",
] as const;

/**
 * `npm run bench`: Hourglass beside BullMQ doing the same work on the same Redis in the same run.
 * Prints a markdown table, or with `--json` every row as JSON; `--quick` runs smaller sizes for a
 * smoke check.
 */
const values = new Command()
  .name("npm run bench --")
  .option("--quick", "smaller sizes, for a smoke check", false)
  .option("--json", "print every row as JSON on stdout instead of the markdown table", false)
  .addOption(new Option("--only <groups...>", "run only these groups of rows").choices(GROUPS))
  .addOption(
    new Option("--profile <profile>", "the construct's profile for the aws rows")
      .choices(["standard", "lean"])
      .default("standard"),
  )
  .option("--burst <n>", "events in each burst row (default 20,000; a tenth with --quick)", Number)
  .option("--webhooks <n>", "webhooks in the webhook row (default 2,000; a tenth with --quick)", Number)
  .option("--pollers <n>", "the webhook row's long polls in flight (default: what npm start uses)", Number)
  .option("--in-flight <n>", "the webhook row's messages in flight (default: what npm start uses)", Number)
  .option(
    "--workers <k>",
    "worker processes in the full-stack rows (default: what npm start uses, HOURGLASS_LOCAL_WORKERS or one per CPU; 0: in the bench's process)",
    Number,
  )
  .addOption(
    new Option("--fauxqs <where>", "fauxqs in a child process (as npm start) or in this one (the old layout)")
      .choices(["child", "process"])
      .default("child"),
  )
  .parse()
  .opts<{
    quick: boolean;
    json: boolean;
    only?: (typeof GROUPS)[number][];
    burst?: number;
    webhooks?: number;
    fauxqs: FauxqsPlacement;
    pollers?: number;
    inFlight?: number;
    workers?: number;
    profile: "standard" | "lean";
  }>();
const WORKERS = values.workers ?? loadConfig(process.env, { HOURGLASS_MODE: "local" }).local.workers;
const selected = (group: (typeof GROUPS)[number]) => !values.only || values.only.includes(group);
const scale = values.quick ? 0.1 : 1;
const N = {
  enqueue: Math.round(50_000 * scale),
  single: Math.round(5_000 * scale),
  memory: Math.round(50_000 * scale),
  memoryJournal: Math.round(20_000 * scale),
  rebuildNear: Math.round(5_000 * scale),
  rebuildFar: Math.round(20_000 * scale),
  burst: values.burst ?? Math.round(20_000 * scale),
  fullEnqueue: Math.round(10_000 * scale),
  httpEnqueue: Math.round(10_000 * scale),
  webhooks: values.webhooks ?? Math.round(2_000 * scale),
  steadySeconds: values.quick ? 3 : 8,
};

const rows: string[][] = [];
/** Machine-readable rows for `--json`: the printed cells, plus the raw figures where a row gives them. */
const records: Record<string, unknown>[] = [];
const row = (what: string, ours: string, peer: string, ratio: string, target: string, data?: object) => {
  rows.push([what, ours, peer, ratio, target, load()]);
  records.push({ what, hourglass: ours, peer, ratio, target, loadAverage: load(), ...(data && { data }) });
  console.error(`  ${what}: ${ours} | peer ${peer} | ${ratio} (load average ${load()})`);
};
const rate = (n: number) => `${Math.round(n).toLocaleString("en-US")}/s`;
const times = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const ms = (l: Lateness) => `p50 ${Math.round(l.p50)} ms, p99 ${Math.round(l.p99)} ms`;
const late = (l: Lateness) => `${ms(l)}; drain ${rate(l.drainPerSecond)}; early ${l.early}`;

// Its own Redis, DynamoDB Local and fauxqs on free ports: never the ones other people's tests use.
const benchStack = await startBenchStack({ fauxqs: values.fauxqs });
const { redisServer, hz, redisVersion: version } = benchStack;
const redis = new Redis(redisServer.url);
const bull = new BullPeer(redisServer.url);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
console.error(
  `Redis ${version} on ${redisServer.url}, hz ${hz}; fauxqs in ${values.fauxqs === "child" ? "a child process" : "this process"}; load average ${load()}`,
);

try {
  // Enqueue throughput: the engine's batch API (Redis index only) against BullMQ addBulk.
  if (selected("enqueue")) {
    const { hourglass } = await benchHourglass("engine", redisServer.url);
    const ours = await enqueueBatch(hourglass, N.enqueue, 100, 1_000, 86_400_000);
    const peer = await bull.enqueueBatch(N.enqueue, 100);
    row(
      `enqueue, batch of 1,000 (${N.enqueue.toLocaleString("en-US")} events)`,
      rate(ours),
      rate(peer),
      times(ours, peer),
      "≥ 3×",
    );
    const oursSingle = await enqueueSingle(hourglass, N.single, 100, 16);
    const peerSingle = await bull.enqueueSingle(N.single, 100, 16);
    row(
      "enqueue, one at a time, 16 in flight",
      rate(oursSingle),
      rate(peerSingle),
      times(oursSingle, peerSingle),
      "reported",
    );
    await hourglass.close();
  }

  // Redis memory per pending event, 100-byte payload.
  if (selected("memory")) {
    const used = async () => Number((await redis.info("memory")).match(/used_memory:(\d+)/)![1]);
    await redis.flushall();
    const before = await used();
    const { hourglass } = await benchHourglass("engine", redisServer.url);
    await enqueueBatch(hourglass, N.memory, 100, 1_000, 86_400_000);
    const ours = ((await used()) - before) / N.memory;
    await hourglass.close();
    await redis.flushall();
    const beforeJournal = await used();
    const full = await benchHourglass("full", redisServer.url);
    // Due in 30 minutes: within the near horizon (an hour), so indexed at once.
    await enqueueBatch(full.hourglass, N.memoryJournal, 100, 500, 1_800_000);
    const oursJournal = ((await used()) - beforeJournal) / N.memoryJournal;
    await full.hourglass.close();
    const oursFar = await journalBytesPerEvent(redis, redisServer.url, N.memoryJournal, 86_400_000);
    await redis.flushall();
    const beforePeer = await used();
    await bull.enqueueBatch(N.memory, 100);
    const peer = ((await used()) - beforePeer) / N.memory;
    await redis.flushall();
    const share = (bytes: number) => `${((bytes / peer) * 100).toFixed(0)}%`;
    row(
      "Redis bytes per pending event, journal on, due a day or more ahead (journal only)",
      `${Math.round(oursFar)} B`,
      `${Math.round(peer)} B`,
      share(oursFar),
      "≤ 10%",
    );
    row(
      "Redis bytes per pending event, journal on, due within the near horizon (payload in DynamoDB)",
      `${Math.round(oursJournal)} B`,
      `${Math.round(peer)} B`,
      share(oursJournal),
      "≤ 40%",
    );
    row(
      "Redis bytes per pending event, engine only (payload inline)",
      `${Math.round(ours)} B`,
      `${Math.round(peer)} B`,
      share(ours),
      "≤ 40%",
    );
  }

  // Rebuild after FLUSHALL: only the near horizon comes back; the loader promotes the rest later.
  if (selected("memory")) {
    const r = await rebuildAfterFlush(redis, redisServer.url, N.rebuildNear, N.rebuildFar);
    row(
      `rebuild after FLUSHALL (${r.pending.toLocaleString("en-US")} pending, ${N.rebuildNear.toLocaleString("en-US")} near)`,
      `${r.reloaded.toLocaleString("en-US")} reloaded (index ${r.indexSize.toLocaleString("en-US")}) in ${Math.round(r.ms)} ms`,
      "— (delayed jobs lost)",
      "",
      "only the near horizon",
    );
  }

  // Claim and dispatch: events that all became due, claimed and handed to a (counting) transport.
  if (selected("dispatch")) {
    const ours = await dispatchThroughput(redisServer.url, N.burst);
    const peer = await bull.promote(N.burst);
    row(
      "claim + dispatch (BullMQ: promote delayed → wait)",
      rate(ours),
      rate(peer),
      times(ours, peer),
      "reported",
    );
  }

  // Burst and steady lateness, engine only: Redis index, in-process transport, journal off.
  if (selected("engine")) {
    const ours = await burst("engine", redisServer.url, N.burst, 8_000);
    const peer = await bull.burst(N.burst, 100, 8_000, 100);
    row(
      `burst: ${N.burst.toLocaleString("en-US")} due in the same second, engine only`,
      late(ours),
      late(peer),
      `drain ${times(ours.drainPerSecond, peer.drainPerSecond)}`,
      "drain ≥ 2×, p99 ≤ 1 s, 0 early",
    );
    const oursSteady = await steady("engine", redisServer.url, 100, N.steadySeconds, 8_000);
    const peerSteady = await bull.steady(100, N.steadySeconds, 8_000);
    row("steady 100/s, engine only", late(oursSteady), late(peerSteady), "", "p99 ≤ 100 ms, 0 early");
  }

  if (selected("fairness")) await fairnessRow(); // issue 11: a small tenant beside a big one, all due at once

  // The full local stack: DynamoDB Local journal, fauxqs queue, the `npm start` runtime.
  if (selected("full")) {
    const { hourglass } = await benchHourglass("full", redisServer.url);
    const ours = await enqueueBatch(hourglass, N.fullEnqueue, 100, 500, 86_400_000);
    await hourglass.close();
    row(
      `enqueue with the DynamoDB journal, batch of 500 (${N.fullEnqueue.toLocaleString("en-US")})`,
      rate(ours),
      "—",
      "",
      "measured",
    );
    // Give the enqueue time to finish before the events fall due.
    const lead = Math.max(8_000, Math.ceil((N.burst / ours) * 1_500) + 6_000);
    const full = await burst("full", redisServer.url, N.burst, lead, WORKERS);
    const peer = await bull.burst(N.burst, 100, 8_000, 100);
    row(
      `burst: ${N.burst.toLocaleString("en-US")} due in the same second, full local stack (${WORKERS} worker processes)`,
      `${late(full)}${full.complete ? "" : " (INCOMPLETE)"}`,
      late(peer),
      `drain ${times(full.drainPerSecond, peer.drainPerSecond)}`,
      "all fire, 0 early, p99 ≤ 3 s",
    );
    const fullSteady = await steady("full", redisServer.url, 100, N.steadySeconds, 8_000, {
      workers: WORKERS,
    });
    row("steady 100/s, full local stack", late(fullSteady), "—", "", "p99 ≤ 100 ms, 0 early");
    notificationRow(await notificationOverhead("full", redisServer.url, 100, N.steadySeconds, 8_000));
  }

  // 300 buyers at once for 100 units: Redis admission in front of the ledger, against the least
  // a DynamoDB-only hold costs (one conditional UpdateItem each on one item, same DynamoDB Local).
  if (selected("holds")) {
    const ours = await hotHolds(redisServer.url, 300, 100);
    const peer = await conditionalUpdates(ours.table, 300, 100);
    const held = (r: { ms: number; won: number; refused: number }) =>
      `${Math.round(r.ms)} ms (${r.won} held, ${r.refused} refused)`;
    row(
      "300 concurrent holds on one SKU, 100 in stock (peer: 300 conditional UpdateItem on one item, DynamoDB Local)",
      held(ours),
      held(peer),
      `${times(peer.ms, ours.ms)} faster`,
      "≤ 1 s and faster than the peer",
      { hourglass: { ms: ours.ms, won: ours.won, refused: ours.refused }, peer },
    );
    // The same through the public API, as a client sees it, beside the same peer measured again
    // right after it (issue 33, finding 8). Each pair runs twice and the second counts: DynamoDB
    // Local's JIT warms up over its first few thousand items, which otherwise favours whichever
    // side runs later.
    await conditionalUpdates((await httpHotHolds(redisServer.url, 300, 100)).table, 300, 100);
    const overHttp = await httpHotHolds(redisServer.url, 300, 100);
    const httpPeer = await conditionalUpdates(overHttp.table, 300, 100);
    row(
      "300 concurrent holds on one SKU, 100 in stock, POST /v1/reservations (30 s holds), full local stack (peer: 300 conditional UpdateItem on one item, DynamoDB Local)",
      held(overHttp),
      held(httpPeer),
      `${times(overHttp.ms, httpPeer.ms)} of the peer's time`,
      "≤ 0.5× the peer's time",
      { hourglass: { ms: overHttp.ms, won: overHttp.won, refused: overHttp.refused }, peer: httpPeer },
    );
  }

  // Durable enqueue through the public API, full local stack, against BullMQ addBulk.
  if (selected("http")) {
    // Both warmed up first with as many events as they are timed on (DynamoDB Local's JIT; see
    // http-enqueue.ts), untimed.
    const ours = await httpBatchEnqueue(redisServer.url, N.httpEnqueue, 500, N.httpEnqueue);
    await bull.enqueueBatch(N.httpEnqueue, 100, 500);
    const peer = await bull.enqueueBatch(N.httpEnqueue, 100, 500);
    row(
      `durable enqueue, POST /v1/events/batch of 500 (${N.httpEnqueue.toLocaleString("en-US")} events), full local stack (peer: addBulk of 500)`,
      rate(ours),
      rate(peer),
      times(ours, peer),
      "≥ 0.5× (within 2×)",
      { hourglassPerSecond: ours, peerPerSecond: peer },
    );
  }

  // Webhooks due in the same second: the `npm start` runtime against BullMQ + a Worker POSTing them.
  // Their ids are the client's, so each create is a conditional put: on a loaded machine DynamoDB
  // Local takes 2,000 of them in 5–20 s, and the lead must cover that (it adds nothing to lateness).
  if (selected("webhooks")) {
    const WEBHOOK_LEAD_MS = Math.max(10_000, N.webhooks * 15);
    const ours = await hourglassWebhooks(redisServer.url, N.webhooks, WEBHOOK_LEAD_MS, {
      ...(values.pollers && { pollers: values.pollers }),
      ...(values.inFlight && { maxInFlight: values.inFlight }),
      workers: WORKERS,
    });
    const peer = await bullWebhooks(redisServer.url, N.webhooks, 5_000);
    row(
      `${N.webhooks.toLocaleString("en-US")} webhooks due in the same second, local receiver, ${WORKERS} worker processes (peer: BullMQ Worker, concurrency 50)`,
      `${late(ours)}${ours.complete ? "" : " (INCOMPLETE)"}; handlers started ${ours.started ? ms(ours.started) : "?"}; all in the queue at ${ours.sentMs ? Math.round(ours.sentMs.all) : "?"} ms`,
      `${late(peer)}${peer.complete ? "" : " (INCOMPLETE)"}`,
      `p99 ${times(ours.p99, peer.p99)}`,
      "p99 ≤ the peer's, 0 early",
      { hourglass: ours, peer },
    );
  }
  if (selected("aws")) await awsShapedRows();
} finally {
  await bull.close();
  redis.disconnect();
  await benchStack.stop();
}

const when = new Date().toISOString();
if (values.json) {
  const run = {
    redis: version,
    hz: Number(hz),
    node: process.version,
    at: when,
    quick: values.quick,
    fauxqs: values.fauxqs,
  };
  console.log(JSON.stringify({ ...run, rows: records }, null, 2));
} else {
  console.log(
    `\nRedis ${version}, hz ${hz}; Node ${process.version}; fauxqs: ${values.fauxqs}; ${when}${values.quick ? " (--quick)" : ""}\n`,
  );
  console.log(
    "| what | Hourglass | peer (BullMQ 6.7 unless the row names another) | ratio | target | load average |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
}
process.exit(0);

/** Steady p99 with every transition published beside the same load with notifications off. */
function notificationRow(result: Awaited<ReturnType<typeof notificationOverhead>>) {
  row(
    "notification overhead: steady 100/s, full local stack, notifications on | off",
    `on: ${ms(result.on)}; early ${result.on.early}; ${result.published.toLocaleString("en-US")} published, ${result.failed} failed`,
    `off: ${ms(result.off)}`,
    `p99 ${Math.round(result.on.p99 - result.off.p99)} ms`,
    "publishing never slows the event",
  );
}

/** Issue 11's fairness figure: 100 events of one tenant beside 100,000 of another, engine only. */
async function fairnessRow() {
  const big = Math.round(100_000 * scale);
  const result = await fairness(redisServer.url, big, 100, Math.max(8_000, big / 10));
  row(
    `fairness: 100 events beside ${big.toLocaleString("en-US")} of another tenant, all due at once, engine only`,
    `small ${late(result.small)}; big ${ms(result.big)}; the small tenant's last start after ${result.bigBefore.toLocaleString("en-US")} of the big one's; enqueue done ${Math.round(result.slackMs)} ms before due${result.complete ? "" : " (INCOMPLETE)"}`,
    "—",
    "",
    "small tenant keeps normal lateness",
  );
}

/**
 * Issue 32's rows: the synthesized stack's bundles in the AWS-shaped mode with AWS latencies, the
 * template's cadence and the worker at its maximum concurrency. No peer runs these: EventBridge
 * Scheduler fires within 60 s by design, the figure these rows are read against.
 */
async function awsShapedRows() {
  const bench = await startAwsShapedBench(values.profile);
  const shaped = (r: Awaited<ReturnType<typeof awsSteady>>) =>
    `${ms(r.lateness)}; early ${r.lateness.early}; ${r.delivered.toLocaleString("en-US")}/${r.events.toLocaleString("en-US")} delivered, ${r.duplicates} again; drain ${Math.round(r.drainMs / 100) / 10} s; ${r.workerEnvironments} worker environments (${r.coldStarts} cold starts)`;
  try {
    const minutes = values.quick ? 1 : 5;
    const steadyRow = await awsSteady(bench, "steady", 10, minutes * 60, 150_000);
    row(
      `AWS-shaped (${values.profile}, --latency aws): steady 10/s for ${minutes} min, each 150 s ahead (dispatcher tick + SQS delay)`,
      shaped(steadyRow),
      "EventBridge Scheduler: up to 60 s",
      "",
      "p99 ≤ 1.5 s, 0 early",
      { hourglass: steadyRow },
    );
    const ahead = await awsSteady(bench, "ahead", 2, values.quick ? 20 : 60, 5_000);
    row(
      `AWS-shaped (${values.profile}, --latency aws): created 5 s ahead (the API's direct send), 2/s`,
      shaped(ahead),
      "—",
      "",
      "p99 reported, 0 early",
      { hourglass: ahead },
    );
    const burstRow = await awsBurst(bench, N.burst, 150_000);
    row(
      `AWS-shaped (${values.profile}, --latency aws): ${N.burst.toLocaleString("en-US")} due in one second, worker maximum concurrency 50`,
      shaped(burstRow),
      "—",
      "",
      "drain and p99 reported; every event once, none early",
      { hourglass: burstRow },
    );
  } finally {
    await bench.stop();
  }
}
