import { createSqsBatchHandler } from "../../shared/events/sqs-batch.ts";
import type { WorkResult } from "../../shared/events/worker.ts";
import type { Hourglass } from "../../shared/hourglass.ts";
import type { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";
import { QueuePoller } from "../../shared/local/poller.ts";
import { silentLogger } from "../../shared/logger.ts";

/**
 * The local queue consumer on `hg`'s work queue, through the worker Lambda's own batch handler,
 * already started: the worker side alone, for tests that drive the dispatcher themselves (or not
 * at all). Stop it with `stop()`.
 */
export function startConsumer(
  hg: Hourglass,
  options: {
    readonly pollers?: number;
    readonly maxInFlight?: number;
    readonly outcomes?: TrailingOutcomes;
    readonly onResult?: (result: WorkResult) => void;
  } = {},
): QueuePoller {
  const poller = new QueuePoller(
    hg.sqs,
    hg.queueUrl!,
    createSqsBatchHandler(hg.worker, silentLogger, options.onResult),
    silentLogger,
    options.pollers ?? 2,
    options.maxInFlight ?? 10,
    1,
    options.outcomes,
    hg.worker,
    hg.config.eventsPerMessage,
  );
  poller.start();
  return poller;
}

/** Runs `hg`'s dispatcher a tick every `everyMs`, as the runtime does; the result stops it. */
export function dispatchEvery(hg: Hourglass, everyMs = 100): () => Promise<void> {
  let running = true;
  const loop = (async () => {
    while (running) {
      await hg.dispatcher.tick(everyMs);
      await new Promise((done) => setTimeout(done, everyMs));
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
