import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createSqsBatchHandler } from "../events/sqs-batch.ts";
import type { Hourglass } from "../hourglass.ts";
import { TrailingOutcomes } from "./outcome-gate.ts";
import { QueuePoller } from "./poller.ts";
import { WorkerPool, type WorkerPoolOptions } from "./worker-pool.ts";
import { encodeMainArgs } from "./worker-protocol.ts";

export interface Runtime {
  /** Resolves once every worker polls the queue; rejects if a worker process died first. */
  readonly ready: Promise<void>;
  /** The worker processes, when the worker runs in processes of its own. */
  readonly pool: WorkerPool | undefined;
  stop(): Promise<void>;
}

export interface RuntimeOptions {
  tickMs?: number;
  /** Long polls at a time, and messages in flight, of the in-process consumer. */
  pollers?: number;
  maxInFlight?: number;
  /**
   * Run the worker in these processes instead of this one (`npm start`: `workerProcesses`). This
   * process then runs the dispatcher only.
   */
  workers?: WorkerPoolOptions;
}

/** `npm start`'s consumer settings, in this process or in each worker process. */
export const LOCAL_POLLERS = 4;
export const LOCAL_MAX_IN_FLIGHT = 500;

/**
 * Plays the parts EventBridge Scheduler and Lambda play on AWS: runs the dispatcher every tick and
 * the worker behind a long-polling consumer of the work queue, through the same handler code,
 * either in this process or in worker processes of its own (as Lambda scales the worker out).
 */
export function startRuntime(hourglass: Hourglass, options: RuntimeOptions = {}): Runtime {
  const tickMs = options.tickMs ?? hourglass.config.tickMs;
  const { logger } = hourglass;
  let running = true;
  const dispatching = (async () => {
    while (running) {
      const started = Date.now();
      try {
        await hourglass.dispatcher.tick(tickMs);
      } catch (error) {
        logger.error("dispatcher tick failed", { error });
      }
      const rest = tickMs - (Date.now() - started);
      if (rest > 0 && running) await sleep(rest);
    }
    await hourglass.dispatcher.settled();
  })();
  const pool =
    options.workers && options.workers.count > 0 ? new WorkerPool(options.workers, logger) : undefined;
  const poller =
    hourglass.queueUrl && !pool
      ? new QueuePoller(
          hourglass.sqs,
          hourglass.queueUrl,
          createSqsBatchHandler(hourglass.worker, logger),
          logger,
          options.pollers ?? LOCAL_POLLERS,
          options.maxInFlight ?? LOCAL_MAX_IN_FLIGHT,
          undefined,
          TrailingOutcomes.for(
            hourglass.worker,
            hourglass.config.local.outcomeTrailMs,
            options.maxInFlight ?? LOCAL_MAX_IN_FLIGHT,
          ),
          hourglass.worker,
          hourglass.config.eventsPerMessage,
        )
      : undefined;
  poller?.start();
  const ready = pool ? pool.start() : Promise.resolve();
  ready.catch(() => {}); // the caller's to handle; never an unhandled rejection here
  return {
    ready,
    pool,
    async stop() {
      running = false;
      await Promise.all([dispatching, poller?.stop(), pool?.stop()]);
    },
  };
}

/**
 * `npm start`'s worker processes: `count` of them, each loading the handlers from
 * `handlersModule` (an absolute path) and polling with the local consumer's settings.
 */
export function workerProcesses(
  count: number,
  handlersModule: string,
  consumer: { pollers?: number; maxInFlight?: number } = {},
): WorkerPoolOptions {
  return {
    count,
    entry: WORKER_MAIN,
    args: encodeMainArgs({
      handlersModule,
      pollers: consumer.pollers ?? LOCAL_POLLERS,
      maxInFlight: consumer.maxInFlight ?? LOCAL_MAX_IN_FLIGHT,
    }),
  };
}

const WORKER_MAIN = fileURLToPath(new URL("./worker-main.ts", import.meta.url));
