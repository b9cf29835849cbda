import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { startLocalStack, useLocalEndpoints } from "../shared/local/stack.ts";
import { startRedisServer } from "../test/support/redis-servers.ts";
import { BullPeer } from "./bullmq.ts";
import {
  benchHourglass,
  burst,
  dispatchThroughput,
  enqueueBatch,
  enqueueSingle,
  fairness,
  steady,
} from "./hourglass.ts";
import type { Lateness } from "./stats.ts";

/**
 * `npm run bench`: Hourglass beside BullMQ doing the same work on the same Redis in the same run.
 * Prints a markdown table; `--quick` runs smaller sizes for a smoke check.
 */
const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const scale = values.quick ? 0.1 : 1;
const N = {
  enqueue: Math.round(50_000 * scale),
  single: Math.round(5_000 * scale),
  memory: Math.round(50_000 * scale),
  memoryJournal: Math.round(20_000 * scale),
  burst: Math.round(20_000 * scale),
  fullEnqueue: Math.round(10_000 * scale),
  steadySeconds: values.quick ? 3 : 8,
};

const rows: string[][] = [];
const row = (what: string, ours: string, peer: string, ratio: string, target: string) => {
  rows.push([what, ours, peer, ratio, target]);
  console.error(`  ${what}: ${ours} | BullMQ ${peer} | ${ratio}`);
};
const rate = (n: number) => `${Math.round(n).toLocaleString("en-US")}/s`;
const times = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const ms = (l: Lateness) => `p50 ${Math.round(l.p50)} ms, p99 ${Math.round(l.p99)} ms`;
const late = (l: Lateness) => `${ms(l)}; drain ${rate(l.drainPerSecond)}; early ${l.early}`;

const redisServer = await startRedisServer();
const redis = new Redis(redisServer.url);
const hz = ((await redis.config("GET", "hz")) as string[])[1];
const version = (await redis.info("server")).match(/redis_version:(\S+)/)?.[1];
const stack = await startLocalStack({
  redisUrl: redisServer.url,
  dataDir: ".hourglass/bench",
  persist: false,
});
useLocalEndpoints(stack);
const bull = new BullPeer(redisServer.url);
console.error(`Redis ${version} on ${redisServer.url}, hz ${hz}`);

try {
  // Enqueue throughput: the engine's batch API (Redis index only) against BullMQ addBulk.
  {
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
  {
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
    await enqueueBatch(full.hourglass, N.memoryJournal, 100, 500, 86_400_000);
    const oursJournal = ((await used()) - beforeJournal) / N.memoryJournal;
    await full.hourglass.close();
    await redis.flushall();
    const beforePeer = await used();
    await bull.enqueueBatch(N.memory, 100);
    const peer = ((await used()) - beforePeer) / N.memory;
    await redis.flushall();
    const share = (bytes: number) => `${((bytes / peer) * 100).toFixed(0)}%`;
    row(
      "Redis bytes per pending event, journal on (payload in DynamoDB)",
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

  // Claim and dispatch: events that all became due, claimed and handed to a (counting) transport.
  {
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
  {
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

  await fairnessRow(); // issue 11: a small tenant beside a big one, all due at once

  // The full local stack: DynamoDB Local journal, fauxqs queue, the `npm start` runtime.
  {
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
    const full = await burst("full", redisServer.url, N.burst, lead);
    const peer = await bull.burst(N.burst, 100, 8_000, 100);
    row(
      `burst: ${N.burst.toLocaleString("en-US")} due in the same second, full local stack`,
      `${late(full)}${full.complete ? "" : " (INCOMPLETE)"}`,
      late(peer),
      `drain ${times(full.drainPerSecond, peer.drainPerSecond)}`,
      "all fire, 0 early, p99 ≤ 3 s",
    );
    const fullSteady = await steady("full", redisServer.url, 100, N.steadySeconds, 8_000);
    row("steady 100/s, full local stack", late(fullSteady), "—", "", "p99 ≤ 100 ms, 0 early");
  }
} finally {
  await bull.close();
  redis.disconnect();
  await stack.stop();
  await redisServer.kill();
}

console.log(
  `\nRedis ${version}, hz ${hz}; Node ${process.version}; ${new Date().toISOString()}${values.quick ? " (--quick)" : ""}\n`,
);
console.log("| what | Hourglass | BullMQ 6.7 | ratio | target |");
console.log("|---|---|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
process.exit(0);

/** Issue 11's fairness figure: 100 events of one tenant beside 100,000 of another, engine only. */
async function fairnessRow() {
  const big = Math.round(100_000 * scale);
  const result = await fairness(redisServer.url, big, 100, Math.max(8_000, big / 10));
  row(
    `fairness: 100 events beside ${big.toLocaleString("en-US")} of another tenant, all due at once, engine only`,
    `small ${late(result.small)}; big ${ms(result.big)}${result.complete ? "" : " (INCOMPLETE)"}`,
    "—",
    "",
    "small tenant keeps normal lateness (not met yet: docs/flow-control.md)",
  );
}
