import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import pMap from "p-map";
import { createDynamoClient } from "../shared/aws.ts";
import { loadConfig } from "../shared/config.ts";
import { batchPut } from "../shared/dynamo/batch.ts";
import { idFactory } from "../shared/ids.ts";
import { toJournalItem } from "../shared/journal/item.ts";
import { ensureTable } from "../shared/local/provision.ts";
import type { NewEvent } from "../shared/model/event.ts";
import { EVENTS_TABLE } from "../shared/resources.ts";
import { dynamoLocalCpuMs, ownCpuMs } from "./process-cpu.ts";
import { startBenchStack } from "./stack.ts";
import { payloadOf } from "./stats.ts";

/**
 * `npx tsx bench/dynamo-ceiling.ts [--n 10000] [--in-flight 1,4,8,16,20] [--warm 20000]`: what DynamoDB Local
 * alone takes of the journal's create writes on this machine, the floor under the durable enqueue
 * row. Journal items exactly as a create writes them (100-byte payload, the events table with its
 * three sparse indexes), sent by one process without the rest of Hourglass: `BatchWriteItem` of 25
 * (generated ids) with 1, 4, 8, 16, 20 requests in flight, and conditional `PutItem` (client ids)
 * with 32 and 64 in flight. Items per second for each, and the CPU time DynamoDB Local and this
 * process spent per item (CPU time hardly moves with the machine's load; items per second do).
 */
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "10000" },
    "in-flight": { type: "string", default: "1,4,8,16,20" },
    puts: { type: "string", default: "2000" },
    warm: { type: "string", default: "20000" },
  },
});
const n = Number(values.n);
const stack = await startBenchStack();
const config = loadConfig(process.env, { HOURGLASS_MODE: "local", HOURGLASS_EVENTS_TABLE: "ceiling-events" });
const client = createDynamoClient();
await ensureTable(client, config.tables.events, EVENTS_TABLE);
const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
const newId = idFactory();
const items = (count: number, generated: boolean) =>
  Array.from({ length: count }, (_, i) => {
    const event: NewEvent = {
      tenant: "bench",
      id: newId(),
      type: "bench.noop",
      payload: payloadOf(100),
      runAt: Date.now() + 86_400_000,
      maxAttempts: undefined,
      backoff: undefined,
      fingerprint: generated ? "" : "x".repeat(43),
      createdAt: Date.now(),
      ...(generated && { generatedId: true as const }),
    };
    return toJournalItem(event, i % 16);
  });
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
const dynamoPort = Number(new URL(stack.stack.dynamoEndpoint).port);
/** Items per second, and CPU µs per item of DynamoDB Local and of this process, around `write`. */
async function measure(count: number, write: () => Promise<unknown>): Promise<string> {
  const [java, node, started] = [dynamoLocalCpuMs(dynamoPort), ownCpuMs(), performance.now()];
  await write();
  const ms = performance.now() - started;
  const javaUs =
    java === undefined ? "?" : Math.round(((dynamoLocalCpuMs(dynamoPort)! - java) * 1000) / count);
  const nodeUs = Math.round(((ownCpuMs() - node) * 1000) / count);
  const perSecond = Math.round(count / (ms / 1000)).toLocaleString("en-US");
  return `${perSecond}/s; CPU per item: DynamoDB Local ${javaUs} µs, client ${nodeUs} µs (load average ${load()})`;
}

try {
  const write = async (batch: object[], concurrency: number) => {
    const failed = await batchPut(doc, {
      table: config.tables.events,
      items: batch,
      key: ["pk"],
      concurrency,
    });
    if (failed.length > 0) throw failed[0]!.error;
  };
  // DynamoDB Local runs interpreted at first: its CPU per item falls about 4× over the first
  // 20,000 items or so (measured), so the figures below are taken after a warm-up that long.
  const warm = Number(values.warm);
  console.log(
    `warm-up, ${warm} items, 8 in flight: ${await measure(warm, () => write(items(warm, true), 8))}`,
  );
  for (const inFlight of values["in-flight"].split(",").map(Number)) {
    const batch = items(n, true);
    const figure = await measure(n, () => write(batch, inFlight));
    console.log(`BatchWriteItem of 25, ${inFlight} in flight: ${figure}`);
  }
  for (const inFlight of [32, 64]) {
    const puts = items(Number(values.puts), false);
    const figure = await measure(puts.length, () =>
      pMap(
        puts,
        (item) =>
          doc.send(
            new PutCommand({
              TableName: config.tables.events,
              Item: item,
              ConditionExpression: "attribute_not_exists(pk)",
            }),
          ),
        { concurrency: inFlight },
      ),
    );
    console.log(`conditional PutItem, ${inFlight} in flight: ${figure}`);
  }
} finally {
  client.destroy();
  await stack.stop();
}
