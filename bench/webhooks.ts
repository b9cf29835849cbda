import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { LOCAL_MAX_IN_FLIGHT, LOCAL_POLLERS, startRuntime } from "../shared/local/runtime.ts";
import { benchHourglass } from "./hourglass.ts";
import { SqsEventCounter } from "./sqs-events.ts";
import { type Lateness, lateness, until } from "./stats.ts";

/**
 * A local HTTP receiver: answers 204 at once and records when each webhook arrived against the
 * due time the sender put in its body. Repeats (at-least-once) count once, by `id`.
 */
export async function startReceiver() {
  const arrivals = new Map<string, { runAt: number; startedAt: number }>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const startedAt = Date.now();
      try {
        const { id, due } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string; due: number };
        if (!arrivals.has(id)) arrivals.set(id, { runAt: due, startedAt });
      } catch {
        // Not one of ours; answered all the same.
      }
      response.writeHead(204).end();
    });
  });
  // Sockets kept alive, as a real receiver (and undici on the BullMQ side) would.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

export interface WebhookRun extends Lateness {
  readonly complete: boolean;
  /** Hourglass only: when the handlers started (before the request), against runAt. */
  readonly started?: Lateness;
  /** Hourglass only: ms after the due time when half, and all, of the messages were in the queue. */
  readonly sentMs?: { readonly half: number; readonly all: number };
}

/**
 * `n` `webhook` events due in the same second, `leadMs` from now, fired by the local runtime
 * exactly as `npm start` runs it (dispatcher tick, fauxqs queue, worker with signing, in
 * `runtimeOptions.workers` processes of its own), at a local receiver. Lateness is the receiver's arrival time against each event's runAt.
 */
export async function hourglassWebhooks(
  redisUrl: string,
  n: number,
  leadMs: number,
  /** The consumer's settings (in each worker process); by default what `npm start` uses. */
  runtimeOptions: { pollers?: number; maxInFlight?: number; workers?: number } = {},
): Promise<WebhookRun> {
  const receiver = await startReceiver();
  const { hourglass, samples, workers } = await benchHourglass("full", redisUrl);
  const sends: { at: number; entries: number }[] = [];
  const sqsEvents = new SqsEventCounter();
  hourglass.sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === "SendMessageBatchCommand")
        sends.push({ at: Date.now(), entries: sqsEvents.count("SendMessageBatch", args.input, undefined) });
      return result;
    },
    { step: "initialize", name: "bench-last-send" },
  );
  const consumer = {
    pollers: runtimeOptions.pollers ?? LOCAL_POLLERS,
    maxInFlight: runtimeOptions.maxInFlight ?? LOCAL_MAX_IN_FLIGHT,
  };
  const runtime = startRuntime(hourglass, {
    ...consumer,
    ...(runtimeOptions.workers && { workers: workers(runtimeOptions.workers, consumer) }),
  });
  await runtime.ready;
  try {
    const dueAt = Date.now() + leadMs;
    const runAt = new Date(dueAt).toISOString();
    for (let i = 0; i < n; i += 500) {
      const results = await hourglass.events.scheduleBatch(
        "bench",
        Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
          id: `hook-${i + j}`,
          type: "webhook",
          payload: { url: receiver.url, body: { id: `hook-${i + j}`, due: dueAt } },
          runAt,
        })),
      );
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
    }
    if (Date.now() > dueAt) throw new Error("enqueue outlasted the lead time; raise it");
    const complete = await until(() => receiver.arrivals.size >= n, leadMs + 120_000);
    return {
      ...lateness([...receiver.arrivals.values()]),
      complete,
      started: lateness(samples),
      sentMs: { half: sentBy(sends, n / 2) - dueAt, all: sentBy(sends, n) - dueAt },
    };
  } finally {
    await runtime.stop();
    await hourglass.close();
    await receiver.close();
  }
}

/** The peer: the same webhooks as BullMQ delayed jobs, and a Worker (concurrency 50) that POSTs them. */
export async function bullWebhooks(redisUrl: string, n: number, leadMs: number): Promise<WebhookRun> {
  const receiver = await startReceiver();
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const name = `hooks-${Date.now()}`;
  const queue = new Queue(name, { connection });
  const worker = new Worker(
    name,
    async (job) => {
      const response = await fetch(job.data.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(job.data.body),
      });
      if (!response.ok) throw new Error(`receiver answered ${response.status}`);
    },
    { connection: new Redis(redisUrl, { maxRetriesPerRequest: null }), concurrency: 50 },
  );
  try {
    const dueAt = Date.now() + leadMs;
    for (let i = 0; i < n; i += 1_000) {
      const now = Date.now();
      await queue.addBulk(
        Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
          name: "webhook",
          data: { url: receiver.url, body: { id: `hook-${i + j}`, due: dueAt } },
          opts: { delay: dueAt - now, removeOnComplete: true, attempts: 3 },
        })),
      );
    }
    const complete = await until(() => receiver.arrivals.size >= n, leadMs + 120_000);
    return { ...lateness([...receiver.arrivals.values()]), complete };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
    await receiver.close();
  }
}

/** When the `count`th message was in the queue (epoch ms). */
function sentBy(sends: readonly { at: number; entries: number }[], count: number): number {
  let seen = 0;
  for (const send of sends) {
    seen += send.entries;
    if (seen >= count) return send.at;
  }
  return Number.NaN;
}
