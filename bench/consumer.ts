import { runWorkerProcess } from "../shared/local/worker-process.ts";
import { silentLogger } from "../shared/logger.ts";
import { noop, type Sample, sampleStart } from "./hourglass.ts";
import { SqsEventCounter } from "./sqs-events.ts";

/**
 * The benchmark's worker process, as `npm start` runs `shared/local/worker-main.ts` (a
 * `WorkerPool` forks it with the instance's settings in its environment): the same
 * `runWorkerProcess`, with the benchmark's handler, reporting each handler start, and the time and
 * size of each SQS and DynamoDB call it makes, to the pool over IPC every 50 ms.
 * Usage: consumer.ts POLLERS MAX_IN_FLIGHT.
 */
const [pollers, maxInFlight] = process.argv.slice(2);
const samples: Sample[] = [];
/** [name, epoch ms, items] of each call: what `bench/full-burst.ts` times its phases by. */
const calls: [string, number, number][] = [];
const report = () => {
  if (samples.length === 0 && calls.length === 0) return;
  process.send?.({ samples: samples.splice(0), calls: calls.splice(0) });
};
setInterval(report, 50).unref();
await runWorkerProcess({
  handlers: [noop],
  workerHooks: { onStart: sampleStart(samples) },
  pollers: Number(pollers),
  maxInFlight: Number(maxInFlight),
  logger: silentLogger,
  prepare: (hourglass) => {
    for (const [service, client] of [
      ["dynamodb", hourglass.dynamo],
      ["sqs", hourglass.sqs],
    ] as const) {
      const stack = client.middlewareStack as unknown as { add(m: unknown, o: unknown): void };
      stack.add(
        (
          next: (args: { input: unknown }) => Promise<{ output?: unknown }>,
          context: { commandName?: string },
        ) =>
          async (args: { input: unknown }) => {
            const result = await next(args);
            const name = callName(service, context.commandName, args.input);
            calls.push([name, Date.now(), itemsOf(name, args.input, result.output)]);
            return result;
          },
        { step: "initialize", name: `bench-calls-${service}` },
      );
    }
  },
});

function callName(service: string, commandName: string | undefined, input: unknown): string {
  const table = (input as { TableName?: string }).TableName?.endsWith("-leases") ? ":lease" : "";
  return `${service}:${(commandName ?? "?").replace(/Command$/, "")}${table}`;
}

const sqsEvents = new SqsEventCounter();

function itemsOf(name: string, input: unknown, output: unknown): number {
  if (name.startsWith("sqs:")) return sqsEvents.count(name.slice(4), input, output);
  return (input as { Entries?: unknown[] }).Entries?.length ?? 1;
}
