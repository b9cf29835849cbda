import { Command } from "commander";
import { Redis } from "ioredis";
import { BullPeer } from "./bullmq.ts";
import { benchHourglass, enqueueBatch, type Mode } from "./hourglass.ts";
import { startBenchStack } from "./stack.ts";

/**
 * Where the Redis memory of pending events goes, key by key: `npx tsx bench/memory-breakdown.ts
 * [--n 20000] [--delay-ms 1800000]`. For each mode (engine only, journal on) it enqueues `n` events
 * with a 100-byte payload on a Redis of its own and prints `used_memory`'s delta per event, then
 * each group of keys (key names with their shard and tenant generalized) with its count, encoding,
 * `MEMORY USAGE` in total and per event. BullMQ's `addBulk` of the same events comes last.
 */
const options = new Command()
  .option("--n <n>", "events per mode", Number, 20_000)
  .option(
    "--delay-ms <ms>",
    "how far ahead the events are due (journal on: near if within the hour)",
    Number,
    1_800_000,
  )
  .parse()
  .opts<{ n: number; delayMs: number }>();

const stack = await startBenchStack();
const redis = new Redis(stack.redisServer.url);
const used = async () => Number((await redis.info("memory")).match(/used_memory:(\d+)/)![1]);
/** The parts of `used_memory` that are not keys: scripts, client buffers, the keyspace's own tables. */
const FIXED = ["used_memory_scripts", "mem_clients_normal", "used_memory_overhead", "used_memory_dataset"];
const parts = async () => {
  const info = await redis.info("memory");
  return FIXED.map((name) => Number(info.match(new RegExp(`${name}:(\\d+)`))?.[1] ?? 0));
};
const printParts = (before: number[], after: number[], n: number) =>
  console.log(FIXED.map((name, i) => `${name} ${((after[i]! - before[i]!) / n).toFixed(1)} B`).join(", "));

async function breakdown(label: string, n: number) {
  const groups = new Map<string, { keys: number; bytes: number; encodings: Set<string>; entries: number }>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const name = key
        .replace(/^\{[^}:]+:/, "{p:")
        .replace(/^\{p:\d+\}/, "{p:S}")
        .replace(/:tdue:.*$/, ":tdue:T")
        .replace(/:bodies:\d+$/, ":bodies:N")
        .replace(/:h:\d+$/, ":h:H")
        .replace(/^bull:[^:]+:[0-9a-f-]+$/, "bull:Q:<job>")
        .replace(/^bull:[^:]+:/, "bull:Q:");
      const [bytes, encoding, type] = await Promise.all([
        redis.memory("USAGE", key, "SAMPLES", 0),
        redis.object("ENCODING", key),
        redis.type(key),
      ]);
      const size =
        type === "zset"
          ? await redis.zcard(key)
          : type === "hash"
            ? await redis.hlen(key)
            : type === "stream"
              ? await redis.xlen(key)
              : type === "set"
                ? await redis.scard(key)
                : 1;
      const group = groups.get(name) ?? { keys: 0, bytes: 0, encodings: new Set(), entries: 0 };
      group.keys += 1;
      group.bytes += Number(bytes ?? 0);
      group.encodings.add(`${type}/${encoding}`);
      group.entries += size;
      groups.set(name, group);
    }
  } while (cursor !== "0");
  const rows = [...groups].sort((a, b) => b[1].bytes - a[1].bytes);
  console.log(`\n${label}`);
  console.log("| keys | count | entries | encoding | MEMORY USAGE | per event |");
  console.log("|---|---|---|---|---|---|");
  for (const [name, g] of rows) {
    console.log(
      `| ${name} | ${g.keys} | ${g.entries} | ${[...g.encodings].join(",")} | ${g.bytes} | ${(g.bytes / n).toFixed(1)} |`,
    );
  }
}

try {
  for (const mode of ["engine", "full"] as Mode[]) {
    await redis.flushall();
    const before = await used();
    const beforeParts = await parts();
    const { hourglass } = await benchHourglass(mode, stack.redisServer.url);
    await enqueueBatch(hourglass, options.n, 100, mode === "engine" ? 1_000 : 500, options.delayMs);
    const delta = ((await used()) - before) / options.n;
    console.log(`\n## ${mode}: used_memory delta ${delta.toFixed(1)} B per event (${options.n} events)`);
    printParts(beforeParts, await parts(), options.n);
    await breakdown(mode, options.n);
    await hourglass.close();
  }
  await redis.flushall();
  const bull = new BullPeer(stack.redisServer.url);
  const before = await used();
  const beforeParts = await parts();
  await bull.enqueueBatch(options.n, 100);
  printParts(beforeParts, await parts(), options.n);
  console.log(
    `\n## BullMQ: used_memory delta ${(((await used()) - before) / options.n).toFixed(1)} B per job`,
  );
  await breakdown("BullMQ", options.n);
  await bull.close();
} finally {
  redis.disconnect();
  await stack.stop();
}
process.exit(0);
