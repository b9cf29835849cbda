import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { BatchWriteItemCommand, CreateTableCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import pMap from "p-map";
import { createDynamoClient } from "../shared/aws.ts";
import { dynamoLocalCpuMs } from "./process-cpu.ts";
import { startBenchStack } from "./stack.ts";

/**
 * `npx tsx bench/dynamo-outcome-ceiling.ts [--n 5000] [--in-flight 50]`: what DynamoDB Local alone takes of
 * the worker's one write per job, the conditional `UpdateItem` that records a success (status
 * `running` or `dispatched` → `succeeded`, as `EventJournal.markSucceeded` sends it), on items
 * written first with `BatchWriteItem`. Reports the rate, this process's CPU per call (the AWS SDK's
 * cost, which every worker pays per event) and DynamoDB Local's CPU over the same window.
 */
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "5000" },
    "in-flight": { type: "string", default: "50" },
  },
});
const n = Number(values.n);
const inFlight = Number(values["in-flight"]);
const loadAtStart = loadavg().map((l) => Number(l.toFixed(1)));
const bench = await startBenchStack();
const port = Number(new URL(bench.stack.dynamoEndpoint).port);
const dynamo = createDynamoClient();
const TableName = "ceiling";
await dynamo.send(
  new CreateTableCommand({
    TableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
    KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
  }),
);
const keys = Array.from({ length: n }, (_, i) => `bench#${i}`);
await pMap(
  Array.from({ length: Math.ceil(n / 25) }, (_, i) => keys.slice(i * 25, i * 25 + 25)),
  (chunk) =>
    dynamo.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [TableName]: chunk.map((pk) => ({
            PutRequest: { Item: { pk: { S: pk }, status: { S: "dispatched" }, attempts: { N: "0" } } },
          })),
        },
      }),
    ),
  { concurrency: 8 },
);

const cpuBefore = process.cpuUsage();
const javaBefore = dynamoLocalCpuMs(port);
const started = Date.now();
await pMap(
  keys,
  (pk) =>
    dynamo.send(
      new UpdateItemCommand({
        TableName,
        Key: { pk: { S: pk } },
        UpdateExpression: "SET #s = :done, attempts = :a, finishedAt = :t",
        ConditionExpression: "#s IN (:running, :dispatched)",
        ExpressionAttributeNames: { "#s": "status" },
        ExpressionAttributeValues: {
          ":done": { S: "succeeded" },
          ":a": { N: "1" },
          ":t": { N: String(Date.now()) },
          ":running": { S: "running" },
          ":dispatched": { S: "dispatched" },
        },
      }),
    ),
  { concurrency: inFlight },
);
const ms = Date.now() - started;
const cpu = process.cpuUsage(cpuBefore);
const javaMs = (dynamoLocalCpuMs(port) ?? Number.NaN) - (javaBefore ?? Number.NaN);
dynamo.destroy();
await bench.stop();
console.log(
  JSON.stringify(
    {
      loadAverageAtStart: loadAtStart,
      loadAverage: loadavg().map((l) => Number(l.toFixed(1))),
      n,
      inFlight,
      updatesPerSecond: Math.round(n / (ms / 1000)),
      clientCpuMsPerUpdate: Number(((cpu.user + cpu.system) / 1000 / n).toFixed(2)),
      dynamoLocalCpuMsPerUpdate: Number((javaMs / n).toFixed(2)),
      dynamoLocalCpuCores: Number((javaMs / ms).toFixed(2)),
    },
    null,
    2,
  ),
);
