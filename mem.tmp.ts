import { Redis } from "ioredis";
import { benchHourglass, enqueueBatch } from "./bench/hourglass.ts";
import { startRedisServer } from "./test/support/redis-servers.ts";

const server = await startRedisServer();
const redis = new Redis(server.url);
const used = async () => Number((await redis.info("memory")).match(/used_memory:(\d+)/)![1]);
const before = await used();
const { hourglass, name } = await benchHourglass("engine", server.url);
await enqueueBatch(hourglass, 50000, 100, 1000, 86_400_000);
console.log("per event", ((await used()) - before) / 50000);
let due = 0,
  body = 0;
for (let s = 0; s < 16; s++) {
  due += Number(await redis.memory("USAGE", `{${name}:${s}}:due`, "SAMPLES", "0"));
  body += Number(await redis.memory("USAGE", `{${name}:${s}}:body`, "SAMPLES", "0"));
}
console.log("due/event", due / 50000, "body/event", body / 50000);
const sample = await redis.hrandfield(`{${name}:0}:body`, 1, "WITHVALUES");
console.log(sample, String(sample[1]).length);
console.log(await redis.zrange(`{${name}:0}:due`, 0, 0));
await hourglass.close();
redis.disconnect();
await server.kill();
process.exit(0);
