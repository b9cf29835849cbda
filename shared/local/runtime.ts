import { setTimeout as sleep } from "node:timers/promises";
import { createSqsBatchHandler } from "../events/sqs-batch.ts";
import type { Hourglass } from "../hourglass.ts";
import { QueuePoller } from "./poller.ts";

export interface Runtime {
  stop(): Promise<void>;
}

/**
 * Plays the parts EventBridge Scheduler and Lambda play on AWS: runs the dispatcher every tick and
 * the worker behind a long-polling consumer of the work queue, through the same handler code.
 */
export function startRuntime(
  hourglass: Hourglass,
  options: { tickMs?: number; pollers?: number; maxInFlight?: number } = {},
): Runtime {
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
  })();
  const poller = hourglass.queueUrl
    ? new QueuePoller(
        hourglass.sqs,
        hourglass.queueUrl,
        createSqsBatchHandler(hourglass.worker, logger),
        logger,
        options.pollers ?? 4,
        options.maxInFlight ?? 500,
      )
    : undefined;
  poller?.start();
  return {
    async stop() {
      running = false;
      await Promise.all([dispatching, poller?.stop()]);
    },
  };
}
