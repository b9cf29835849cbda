import { createSqsBatchHandler } from "../shared/events/sqs-batch.ts";
import { QueuePoller } from "../shared/local/poller.ts";
import { silentLogger } from "../shared/logger.ts";
import { benchHourglass, type Sample } from "./hourglass.ts";

/**
 * A second (third, …) worker process for `bench/full-burst.ts --consumers K`: the same instance's
 * queue, tables and Redis keys, its own event loop, as Lambda runs the worker in many instances.
 * Usage (with an IPC channel): consumer.ts REDIS_URL NAME POLLERS MAX_IN_FLIGHT. Sends its handler
 * starts to the parent every 50 ms; stops on the message "stop".
 */
const [redisUrl, name, pollers, maxInFlight] = process.argv.slice(2);
const { hourglass, samples } = await benchHourglass("full", redisUrl!, { name: name! });
const poller = new QueuePoller(
  hourglass.sqs,
  hourglass.queueUrl!,
  createSqsBatchHandler(hourglass.worker, silentLogger),
  silentLogger,
  Number(pollers),
  Number(maxInFlight),
);
poller.start();
const report = () => {
  const batch: Sample[] = samples.splice(0);
  if (batch.length > 0) process.send?.({ samples: batch });
};
const timer = setInterval(report, 50);
process.on("message", async (message) => {
  if (message !== "stop") return;
  await poller.stop();
  clearInterval(timer);
  report();
  await hourglass.close();
  process.send?.("stopped");
  process.disconnect?.();
});
process.send?.("ready");
