import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import pMap from "p-map";
import { sqsAnswers } from "../shared/local/stack.ts";
import { freePort } from "../test/support/redis-servers.ts";
import { sleep } from "./stats.ts";

/**
 * `npx tsx bench/sqs-ceiling.ts [--n 5000] [--where process|child] [--pollers 16] [--hold] [--cpu 0]`:
 * what fauxqs alone can hand out. Sends `n` messages (all due at once, DelaySeconds 2), then
 * receives them with `pollers` long polls of 10 in flight and deletes each batch at once
 * (`DeleteMessageBatch`), or with `--hold` only after every message is received (so all `n` are in
 * flight at once, as when completion writes trail the starts). `--where child` runs fauxqs in a
 * process of its own; `--cpu MS` burns that many ms of this process's CPU per received batch (the
 * worker's share of one event loop).
 */
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "5000" },
    where: { type: "string", default: "process" },
    pollers: { type: "string", default: "16" },
    hold: { type: "boolean", default: false },
    cpu: { type: "string", default: "0" },
  },
});
const n = Number(values.n);
const pollers = Number(values.pollers);
const cpuPerBatch = Number(values.cpu);
const port = await freePort();
const endpoint = `http://127.0.0.1:${port}`;

let stop: () => Promise<void>;
if (values.where === "child") {
  const child = spawn(process.execPath, ["shared/local/fauxqs-server.mjs", String(port)], {
    stdio: "ignore",
  });
  stop = async () => {
    child.kill("SIGTERM");
    await new Promise((done) => child.once("exit", done));
  };
} else {
  const { buildApp } = await import("fauxqs");
  const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
  await app.listen({ host: "127.0.0.1", port });
  stop = async () => {
    await app.close();
  };
}
while (!(await sqsAnswers(endpoint))) await sleep(100);

const sqs = new SQSClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "local", secretAccessKey: "local" },
  useQueueUrlAsEndpoint: false,
});
const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "ceiling" }));
const body = JSON.stringify({ m: "x".repeat(150) });

const sendStarted = performance.now();
await pMap(
  Array.from({ length: Math.ceil(n / 10) }, (_, b) => b),
  (b) =>
    sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: Array.from({ length: Math.min(10, n - b * 10) }, (_, i) => ({
          Id: String(i),
          MessageBody: body,
          DelaySeconds: 2,
        })),
      }),
    ),
  { concurrency: 8 },
);
const sendMs = performance.now() - sendStarted;
const dueAt = Date.now() + 2_000 - sendMs;
await sleep(Math.max(0, dueAt - Date.now()));

let received = 0;
let polls = 0;
const held: Message[] = [];
const deletes: Promise<unknown>[] = [];
const receiveStarted = performance.now();
let lastReceive = 0;
const del = (messages: Message[]) =>
  sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl,
      Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
    }),
  );
await Promise.all(
  Array.from({ length: pollers }, async () => {
    while (received < n) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      polls++;
      if (Messages.length === 0) continue;
      received += Messages.length;
      lastReceive = performance.now();
      if (cpuPerBatch > 0) {
        const until = performance.now() + cpuPerBatch;
        while (performance.now() < until) {}
      }
      if (values.hold) held.push(...Messages);
      else deletes.push(del(Messages));
    }
  }),
);
const receiveMs = lastReceive - receiveStarted;
await Promise.all(deletes);
if (values.hold) {
  for (let i = 0; i < held.length; i += 10) deletes.push(del(held.slice(i, i + 10)));
  await Promise.all(deletes);
}
sqs.destroy();
await stop();
console.log(
  JSON.stringify({
    n,
    where: values.where,
    pollers,
    hold: values.hold,
    cpuPerBatchMs: cpuPerBatch,
    sendPerSecond: Math.round(n / (sendMs / 1000)),
    receivePerSecond: Math.round(received / (receiveMs / 1000)),
    polls,
    perPoll: Number((received / polls).toFixed(1)),
  }),
);
process.exit(0);
