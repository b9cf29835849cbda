import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { BullPeer } from "./bullmq.ts";
import { httpBatchEnqueue } from "./http-enqueue.ts";
import { dynamoLocalCpuMs, ownCpuMs } from "./process-cpu.ts";
import { startBenchStack } from "./stack.ts";

/**
 * `npx tsx bench/http-enqueue-cpu.ts [--n 10000] [--rounds 2] [--warm 0]`: the durable-enqueue row
 * (`POST /v1/events/batch` of 500) beside BullMQ `addBulk` of 500, alternating, with the CPU each
 * spends per event: this process (client, HTTP app and engine share it, as in the bench), DynamoDB
 * Local and Redis. CPU per event hardly moves with the machine's load, where events per second do.
 */
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "10000" },
    rounds: { type: "string", default: "2" },
    warm: { type: "string", default: "0" },
  },
});
const n = Number(values.n);
const warm = Number(values.warm);
const bench = await startBenchStack();
const dynamoPort = Number(new URL(bench.stack.dynamoEndpoint).port);
const redis = new Redis(bench.redisServer.url);
const bull = new BullPeer(bench.redisServer.url);
const redisCpuMs = async () => {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(info.match(new RegExp(`${name}:([\\d.]+)`))?.[1] ?? 0);
  return (field("used_cpu_user") + field("used_cpu_sys")) * 1000;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

async function measure(what: string, run: () => Promise<number>) {
  const before = { node: ownCpuMs(), java: dynamoLocalCpuMs(dynamoPort) ?? 0, redis: await redisCpuMs() };
  const perSecond = await run();
  const us = (ms: number) => Math.round((ms * 1000) / n);
  console.log(
    `${what}: ${Math.round(perSecond).toLocaleString("en-US")}/s; CPU per event: node ${us(ownCpuMs() - before.node)} µs, ` +
      `DynamoDB Local ${us((dynamoLocalCpuMs(dynamoPort) ?? 0) - before.java)} µs, redis ${us((await redisCpuMs()) - before.redis)} µs (load average ${load()})`,
  );
}

try {
  if (warm > 0) {
    // Untimed, as the bench row does it: DynamoDB Local's JIT, and this process's.
    await httpBatchEnqueue(bench.redisServer.url, warm, 500);
    await bull.enqueueBatch(warm, 100, 500);
  }
  for (let round = 0; round < Number(values.rounds); round++) {
    await measure("POST /v1/events/batch of 500", () => httpBatchEnqueue(bench.redisServer.url, n, 500));
    await measure("BullMQ addBulk of 500", () => bull.enqueueBatch(n, 100, 500));
  }
} finally {
  redis.disconnect();
  await bull.close();
  await bench.stop();
}
