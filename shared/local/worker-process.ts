import { loadConfig } from "../config.ts";
import { createSqsBatchHandler } from "../events/sqs-batch.ts";
import type { WorkerHooks } from "../events/worker.ts";
import type { HandlerDefinition } from "../handlers/registry.ts";
import { createHourglass, type Hourglass } from "../hourglass.ts";
import type { Logger } from "../logger.ts";
import { TrailingOutcomes } from "./outcome-gate.ts";
import { QueuePoller } from "./poller.ts";
import { READY, STOP } from "./worker-protocol.ts";

export interface WorkerProcessOptions {
  readonly handlers: readonly HandlerDefinition[];
  readonly workerHooks?: WorkerHooks;
  /** Long polls at a time, and messages received and not yet finished (see QueuePoller). */
  readonly pollers: number;
  readonly maxInFlight: number;
  /** Called with the built instance before polling starts (the benchmark instruments its clients). */
  readonly prepare?: (hourglass: Hourglass) => void;
  /** @default the instance's own logger */
  readonly logger?: Logger;
}

/**
 * The body of one worker process of the local runtime (`WorkerPool` forks it): what a Lambda
 * instance of the worker is on AWS. It builds its own Hourglass from the environment it was given,
 * long-polls the work queue through the same batch handler the worker Lambda exports, and stops
 * cleanly when the pool says so (finishing what it received and deleting what it finished).
 *
 * It also stops when the pool's process goes away without a word (the IPC channel closes, or this
 * process is re-parented): a worker never outlives the runtime that started it. What it had
 * received and not finished then comes back after the queue's visibility timeout.
 */
export async function runWorkerProcess(options: WorkerProcessOptions): Promise<void> {
  // Listened for before anything is built: a stop that arrives while this process boots (the
  // runtime stopped during its start) is kept and acted on once the poller exists.
  let stop: (code: number) => Promise<void> = async () => {
    stopRequested = true;
  };
  let stopRequested = false;
  process.on("message", (message) => {
    if (message === STOP) void stop(0);
  });
  process.on("disconnect", () => void stop(0));
  // Closed already (the runtime died while this process loaded its modules): no event comes.
  if (process.send && !process.connected) void stop(0);
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGINT", () => void stop(0));
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stop(0);
  }, 500).unref();

  const config = loadConfig(process.env, { HOURGLASS_MODE: process.env.HOURGLASS_MODE ?? "local" });
  const hourglass = await createHourglass({
    config,
    handlers: options.handlers,
    service: "hourglass-worker",
    ...(options.workerHooks && { workerHooks: options.workerHooks }),
    ...(options.logger && { logger: options.logger }),
  });
  options.prepare?.(hourglass);
  const logger = options.logger ?? hourglass.logger;
  const poller = new QueuePoller(
    hourglass.sqs,
    hourglass.queueUrl!,
    createSqsBatchHandler(hourglass.worker, logger),
    logger,
    options.pollers,
    options.maxInFlight,
    undefined,
    TrailingOutcomes.for(hourglass.worker, config.local.outcomeTrailMs, options.maxInFlight),
    hourglass.worker,
    config.eventsPerMessage,
  );
  poller.start();

  let stopping = false;
  stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    try {
      await poller.stop();
      await hourglass.close();
    } catch (error) {
      logger.error("worker process did not stop cleanly", { error });
      code = 1;
    }
    process.exit(code);
  };
  if (stopRequested) {
    await stop(0);
    return;
  }
  process.send?.(READY);
}
